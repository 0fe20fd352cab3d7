{{/* Namespace of every namespaced object. */}}
{{- define "tpu-webhook.namespace" -}}
{{- required "tpuWebhook.namespace.name is required" .Values.tpuWebhook.namespace.name -}}
{{- end -}}

{{/* Labels on every object. Never used in selectors: the Deployment's
selector must stay the reference's {app: kuberay-tpu-webhook}. */}}
{{- define "tpu-webhook.labels" -}}
app.kubernetes.io/name: kuberay-tpu-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The reference's image (Google's Go webhook) does not define this chart's
flags (--tls-cert-file, --shutdown-delay, ...): its pods would exit at start
and the rollout would stop, so it is refused here (docs/deploy.md,
"Upgrading from kuberay-tpu-webhook"). */}}
{{- define "tpu-webhook.image" -}}
{{- $repo := trimSuffix "/" (toString .Values.tpuWebhook.image.repository) -}}
{{- if hasSuffix "ai-on-gke/kuberay-tpu-webhook/tpu-webhook" $repo -}}
{{- fail (printf "tpuWebhook.image.repository is %s, the reference webhook's image, which does not take this chart's flags (its pods would exit at start); set tpuWebhook.image.repository (and tpuWebhook.image.tag) to a tpu-webhook image built from this repository's Dockerfile (docs/deploy.md, \"Upgrading from kuberay-tpu-webhook\")" $repo) -}}
{{- end -}}
{{- printf "%s:%s" .Values.tpuWebhook.image.repository (.Values.tpuWebhook.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* DNS name of the Service, also the reference's webhook name. */}}
{{- define "tpu-webhook.serviceDNS" -}}
{{- printf "kuberay-tpu-webhook.%s.svc" (include "tpu-webhook.namespace" .) -}}
{{- end -}}

{{/* Annotations of both webhook configurations. */}}
{{- define "tpu-webhook.injectCA" -}}
{{- if .Values.tpuWebhook.certManager.enabled -}}
annotations:
  cert-manager.io/inject-ca-from: {{ include "tpu-webhook.namespace" . }}/kuberay-tpu-webhook-ca
{{- end }}
{{- end -}}

{{/* Namespaces never sent to the webhook. */}}
{{- define "tpu-webhook.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: ["kube-system", "kube-node-lease"]
{{- end -}}

{{/* "true" when the webhook configurations carry matchConditions (Kubernetes
1.28+): tpuWebhook.webhook.matchConditions true or false, or "auto" (the
default) for the cluster's version as Helm sees it (.Capabilities; pass
--kube-version to helm template). */}}
{{- define "tpu-webhook.matchConditions" -}}
{{- $m := .Values.tpuWebhook.webhook.matchConditions -}}
{{- if eq (toString $m) "auto" -}}
{{- semverCompare ">=1.28.0-0" .Capabilities.KubeVersion.Version -}}
{{- else if or (eq (toString $m) "true") (eq (toString $m) "false") -}}
{{- toString $m -}}
{{- else -}}
{{- fail (printf "tpuWebhook.webhook.matchConditions is %v; set it to auto, true (Kubernetes 1.28+) or false" $m) -}}
{{- end -}}
{{- end -}}

{{/* The workload webhooks always carry matchConditions (their mutating
entries see only pods requesting TPUs), a field of Kubernetes 1.28+: on an
older cluster the API server does not know it (1.26, Helm's schema check
refuses the object) or drops it unless a feature gate is on (1.27). Refused
here with the fix instead; tpuWebhook.webhook.matchConditions=true asserts
that the cluster has the field (docs/workloads.md). */}}
{{- define "tpu-webhook.workloadsNeedKube" -}}
{{- $kube := .Capabilities.KubeVersion.Version -}}
{{- if and (not (semverCompare ">=1.28.0-0" $kube)) (ne (toString .Values.tpuWebhook.webhook.matchConditions) "true") -}}
{{- fail (printf "tpuWebhook.workloads.enabled is true, but the cluster is Kubernetes %s and the workload webhooks carry matchConditions, which need Kubernetes 1.28 or later; upgrade the cluster to 1.28+, or set tpuWebhook.workloads.enabled=false (KubeRay pods and RayClusters are still served), or set tpuWebhook.webhook.matchConditions=true if this API server has the AdmissionWebhookMatchConditions feature gate on; with helm template pass the cluster's --kube-version (docs/workloads.md)" $kube) -}}
{{- end -}}
{{- end -}}

{{/* The validating webhooks' matchCondition that skips an object being
deleted (docs/deploy.md, "Deletions"): removing a finalizer is an UPDATE,
and with the webhook down a fail-closed webhook that matched it would hold
the object in Terminating. The webhook admits such UPDATEs itself
(src/core/ratchet.c); this keeps the API server from calling it at all.
object is null on DELETE and CONNECT (not in the rules, guarded anyway). */}}
{{- define "tpu-webhook.notDeleting" -}}
- name: not-being-deleted
  expression: object == null || !has(object.metadata.deletionTimestamp)
{{- end -}}

{{/* A container requesting TPU chips, in CEL (the webhook's own test:
src/core/podspec.c, limits or requests). */}}
{{- define "tpu-webhook.celTPU" -}}
has(c.resources) && ((has(c.resources.limits) && 'google.com/tpu' in c.resources.limits) || (has(c.resources.requests) && 'google.com/tpu' in c.resources.requests))
{{- end -}}
