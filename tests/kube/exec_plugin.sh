#!/bin/sh
# exec_plugin.sh: a client.authentication.k8s.io exec credential plugin for
# tests/kube/test_exec.c. $1 is the apiVersion to answer with. It works in
# $PLUGIN_DIR (set through the kubeconfig's exec.env): appends a line to
# runs on each run, saves KUBERNETES_EXEC_INFO to info and what its stdin
# is to stdin, and answers as the file mode says (ok, cert, hang, close
# (closes stdout and stderr, then sleeps), fail;
# default ok) with the token in the file token, valid for the seconds in
# the file ttl (no expirationTimestamp when there is none).
d=$PLUGIN_DIR
echo run >>"$d/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" >"$d/info"
readlink "/proc/$$/fd/0" >"$d/stdin"
mode=$(cat "$d/mode" 2>/dev/null || echo ok)
case $mode in
hang)
    sleep 60
    exit 0
    ;;
close)
    exec >&- 2>&-
    sleep 100
    exit 0
    ;;
fail)
    echo "SECRET-STDOUT-abc123"
    echo "plugin: login required (run the login command)" >&2
    exit 3
    ;;
esac
exp=""
ttl=$(cat "$d/ttl" 2>/dev/null)
if [ -n "$ttl" ]; then
    exp=$(date -u -d "@$(($(date +%s) + ttl))" +%Y-%m-%dT%H:%M:%SZ)
    exp=",\"expirationTimestamp\":\"$exp\""
fi
if [ "$mode" = cert ]; then
    cert=$(awk '{printf "%s\\n", $0}' "$d/client.crt")
    key=$(awk '{printf "%s\\n", $0}' "$d/client.key")
    printf '{"kind":"ExecCredential","apiVersion":"%s","status":{"clientCertificateData":"%s","clientKeyData":"%s"%s}}\n' \
        "$1" "$cert" "$key" "$exp"
    exit 0
fi
printf '{"kind":"ExecCredential","apiVersion":"%s","status":{"token":"%s"%s}}\n' \
    "$1" "$(cat "$d/token")" "$exp"
