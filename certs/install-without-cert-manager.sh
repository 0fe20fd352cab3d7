#!/usr/bin/env bash
# Serving certificate for tpu-webhook on a cluster without cert-manager.
#
# Creates (or reuses) a CA and a server certificate for
# <service>.<namespace>.svc, stores them in the secret the webhook pods mount,
# and writes the CA into the caBundle of both webhook configurations.
# Re-run it to rotate: the pods re-read the mounted files without a restart,
# and the caBundle keeps the previous CA next to the new one, so the API
# server trusts whichever certificate a pod serves during the switch.
#
#   certs/install-without-cert-manager.sh [--dry-run] [--namespace NS] ...
#
# Run it after `kubectl apply -k deploy/kustomize/base` (or a Helm install
# with tpuWebhook.certManager.enabled=false), so that the webhook
# configurations exist. --dry-run prints the kubectl commands instead of
# running them (certificates are still generated locally).
set -euo pipefail

namespace=ray-system
service=kuberay-tpu-webhook
secret=kuberay-tpu-webhook-certs
mutating=kuberay-tpu-mutating-webhook-cfg
validating=kuberay-tpu-validating-webhook-cfg
workloads=0
cert_dir=""
out_dir=""
tpu_webhook=""
kubectl_bin=${KUBECTL:-kubectl}
dry_run=0

usage() {
    cat <<EOF
usage: $0 [options]

  --namespace NS       namespace of the webhook (default: $namespace)
  --service NAME       its Service (default: $service)
  --secret NAME        TLS secret the pods mount (default: $secret)
  --mutating NAME      MutatingWebhookConfiguration (default: $mutating)
  --validating NAME    ValidatingWebhookConfiguration (default: $validating)
  --workloads          also the configurations of the opt-in workload entries
                       (tpu-webhook-workload-{mutating,validating}-cfg;
                       docs/workloads.md)
  --cert-dir DIR       use ca.crt, tls.crt and tls.key from DIR instead of
                       generating them
  --out DIR            where \`tpu-webhook certs\` writes them (default: a new
                       temporary directory); a CA already in DIR is reused
  --tpu-webhook PATH   the tpu-webhook binary (default: from PATH, else
                       build/tpu-webhook)
  --kubectl PATH       kubectl to use (default: \$KUBECTL or kubectl)
  --dry-run            print the kubectl commands instead of running them
  -h, --help           this text
EOF
}

die() {
    echo "install-without-cert-manager: $*" >&2
    exit 1
}

need_value() {
    [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --namespace) need_value "$@"; namespace=$2; shift 2 ;;
        --service) need_value "$@"; service=$2; shift 2 ;;
        --secret) need_value "$@"; secret=$2; shift 2 ;;
        --mutating) need_value "$@"; mutating=$2; shift 2 ;;
        --validating) need_value "$@"; validating=$2; shift 2 ;;
        --cert-dir) need_value "$@"; cert_dir=$2; shift 2 ;;
        --out) need_value "$@"; out_dir=$2; shift 2 ;;
        --tpu-webhook) need_value "$@"; tpu_webhook=$2; shift 2 ;;
        --kubectl) need_value "$@"; kubectl_bin=$2; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        --workloads) workloads=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument '$1'" ;;
    esac
done

# Prints its arguments as one shell command line, quoted for pasting.
print_cmd() {
    local a sep=""
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./=:,@+%-]+$ ]]; then
            printf '%s%s' "$sep" "$a"
        else
            printf "%s'%s'" "$sep" "${a//\'/\'\\\'\'}"
        fi
        sep=" "
    done
}

# Prints a command (dry run) or runs it.
run() {
    if ((dry_run)); then
        print_cmd "$@"
        echo
    else
        "$@"
    fi
}

# 1. Certificates.
if [[ -z $cert_dir ]]; then
    if [[ -z $tpu_webhook ]]; then
        if command -v tpu-webhook >/dev/null; then
            tpu_webhook=$(command -v tpu-webhook)
        else
            tpu_webhook="$(dirname "$0")/../build/tpu-webhook"
        fi
    fi
    [[ -x $tpu_webhook ]] || die "tpu-webhook binary not found at '$tpu_webhook': build it (cmake --build build) or pass --tpu-webhook or --cert-dir"
    if [[ -z $out_dir ]]; then
        out_dir=$(mktemp -d)
    fi
    "$tpu_webhook" certs --dir "$out_dir" --namespace "$namespace" --service "$service" >&2 ||
        die "'$tpu_webhook certs --dir $out_dir' failed"
    cert_dir=$out_dir
fi
for f in ca.crt tls.crt tls.key; do
    [[ -s $cert_dir/$f ]] || die "$cert_dir/$f is missing or empty (need ca.crt, tls.crt, tls.key)"
done

# 2. Refuse a certificate the API server would reject, before touching the cluster.
dns="$service.$namespace.svc"
if command -v openssl >/dev/null; then
    sans=$(openssl x509 -in "$cert_dir/tls.crt" -noout -ext subjectAltName 2>/dev/null | tail -n +2 | tr -d ' \n') ||
        die "$cert_dir/tls.crt is not a PEM certificate"
    IFS=, read -r -a san_list <<<"$sans"
    valid=0
    for n in "${san_list[@]}"; do
        [[ $n == "DNS:$dns" ]] && valid=1
    done
    ((valid)) ||
        die "$cert_dir/tls.crt is not valid for $dns (its names: ${sans:-none}); regenerate it with the right --namespace/--service"
    openssl verify -CAfile "$cert_dir/ca.crt" "$cert_dir/tls.crt" >/dev/null 2>&1 ||
        die "$cert_dir/tls.crt is not signed by $cert_dir/ca.crt"
    [[ $(openssl x509 -in "$cert_dir/tls.crt" -noout -pubkey) == "$(openssl pkey -in "$cert_dir/tls.key" -pubout)" ]] ||
        die "$cert_dir/tls.key does not belong to $cert_dir/tls.crt"
else
    echo "install-without-cert-manager: openssl not found; certificate not checked" >&2
fi
new_ca=$(cat "$cert_dir/ca.crt")

# 3. caBundle of every webhook of both configurations, before the secret
# changes: the new CA plus the CA currently trusted (the first certificate of
# the current bundle), so both the old and the new serving certificate verify
# while the kubelet updates the mounted secret.
patch_ca() {
    local kind=$1 name=$2 count=1 bundle=$new_ca patch="[" i names old
    if ((!dry_run)); then
        names=$("$kubectl_bin" get "$kind" "$name" -o 'jsonpath={.webhooks[*].name}') ||
            die "$kind $name not found: apply the manifests first (see docs/deploy.md)"
        read -r -a names_arr <<<"$names"
        count=${#names_arr[@]}
        ((count > 0)) || die "$kind $name has no webhooks"
        old=$("$kubectl_bin" get "$kind" "$name" -o 'jsonpath={.webhooks[0].clientConfig.caBundle}' |
            base64 -d 2>/dev/null | awk '/-----BEGIN CERTIFICATE-----/ { n++ } n == 1') || old=""
        if [[ -n $old && $old != "$new_ca" ]]; then
            bundle=$new_ca$'\n'$old
        fi
    fi
    local b64
    b64=$(printf '%s\n' "$bundle" | base64 -w0)
    for ((i = 0; i < count; i++)); do
        ((i == 0)) || patch+=","
        patch+="{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$b64\"}"
    done
    patch+="]"
    run "$kubectl_bin" patch "$kind" "$name" --type=json -p "$patch"
}
patch_ca mutatingwebhookconfiguration "$mutating"
patch_ca validatingwebhookconfiguration "$validating"
if ((workloads)); then
    patch_ca mutatingwebhookconfiguration tpu-webhook-workload-mutating-cfg
    patch_ca validatingwebhookconfiguration tpu-webhook-workload-validating-cfg
fi

# 4. The secret the pods mount (same keys as a cert-manager secret). Applied,
# so that re-running rotates it.
if ((dry_run)); then
    print_cmd "$kubectl_bin" -n "$namespace" create secret generic "$secret" \
        --type=kubernetes.io/tls --from-file=ca.crt="$cert_dir/ca.crt" \
        --from-file=tls.crt="$cert_dir/tls.crt" --from-file=tls.key="$cert_dir/tls.key" \
        --dry-run=client -o yaml
    printf ' | '
    print_cmd "$kubectl_bin" apply -f -
    echo
else
    "$kubectl_bin" -n "$namespace" create secret generic "$secret" \
        --type=kubernetes.io/tls --from-file=ca.crt="$cert_dir/ca.crt" \
        --from-file=tls.crt="$cert_dir/tls.crt" --from-file=tls.key="$cert_dir/tls.key" \
        --dry-run=client -o yaml | "$kubectl_bin" apply -f -
    echo "install-without-cert-manager: caBundle of $mutating and $validating and secret $namespace/$secret are set." >&2
    echo "install-without-cert-manager: certificates are in $cert_dir; keep ca.key there private, or delete it." >&2
fi
