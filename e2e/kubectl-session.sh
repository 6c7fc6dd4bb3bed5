#!/usr/bin/env bash
# A kubectl session as a controller author types it against a test cluster: service account
# tokens, RBAC through --as, explain (a built-in kind and a CRD), the three cascades, server-side apply from two
# managers, every --dry-run=server verb, and deleting a namespace whose content has a finalizer.
# Its names (namespace, CRD group and plural) are its own: the servers may hold other tests' objects.
#
#   e2e/kubectl-session.sh KUBECONFIG                 prints the session (uids, times, ages and
#                                                      tokens masked)
#   e2e/kubectl-session.sh KUBECONFIG_A KUBECONFIG_B  runs it against both and diffs: exit 0 when
#                                                      the two servers print the same thing
#
# scripts/test.sh runs the second form with the real kube-apiserver + kube-controller-manager
# (A) and the embedded server (B). The session waits for controllers by polling with a bound,
# never by sleeping a fixed time, so a slow machine changes nothing but the duration.
set -euo pipefail

ns="kubectl-session"
work="$(mktemp -d "${TMPDIR:-/tmp}/kubectl-session-XXXXXX")"
trap 'rm -rf "$work"' EXIT

mask() {
    sed -E 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/<uid>/g;
            s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z/<time>/g;
            s/eyJ[A-Za-z0-9_.-]+/<jwt>/g'
}

# k ARGS: runs kubectl, prints the command and its output (stdout and stderr), masked.
k() {
    echo "\$ kubectl $*"
    kubectl "$@" 2>&1 | mask || true
    echo
}

# until_ok SECONDS CMD...: polls CMD (quietly) until it succeeds; gives up after SECONDS.
until_ok() {
    local limit=$1
    shift
    local end=$((SECONDS + limit))
    until "$@" > /dev/null 2>&1; do
        if ((SECONDS >= end)); then
            echo "(gave up waiting for: $*)"
            return 0
        fi
        sleep 0.2
    done
}

gone() { ! kubectl get "$@" > /dev/null 2>&1; }
no_owners() { [[ -z "$(kubectl get "$@" -o jsonpath='{.metadata.ownerReferences}')" ]]; }
has_condition() {
    kubectl get ns "$ns" -o jsonpath='{.status.conditions[*].type}' | grep -q NamespaceFinalizersRemaining
}

session() {
    kubectl create namespace "$ns" > /dev/null
    until_ok 30 kubectl get serviceaccount default -n "$ns"

    echo "## service account tokens"
    k create token default -n "$ns"
    k create token default -n "$ns" --duration=5m

    echo "## RBAC: an operator's service account, as kubectl --as tests it"
    local op="system:serviceaccount:$ns:operator"
    k create serviceaccount operator -n "$ns"
    k auth can-i list pods -n "$ns" --as="$op"
    k get pods -n "$ns" --as="$op"
    k create rolebinding operator-view -n "$ns" --clusterrole=view --serviceaccount="$ns:operator"
    until_ok 30 kubectl auth can-i list pods -n "$ns" --as="$op"
    k auth can-i list pods -n "$ns" --as="$op"
    k auth can-i list secrets -n "$ns" --as="$op"
    k get pods -n "$ns" --as="$op"
    k create configmap from-operator -n "$ns" --from-literal=a=b --as="$op"
    k auth whoami --as="$op"
    k get pods -n "$ns" --as=jane --as-group=devs

    echo "## explain"
    k explain pods.spec.containers.imagePullPolicy
    cat > "$work/crd.yaml" << 'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sessionwidgets.session.example.com}
spec:
  group: session.example.com
  scope: Namespaced
  names: {plural: sessionwidgets, singular: sessionwidget, kind: SessionWidget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {type: integer, description: How big the widget is.}
EOF
    kubectl apply -f "$work/crd.yaml" > /dev/null
    until_ok 30 kubectl explain sessionwidgets.spec
    k explain sessionwidgets.spec

    echo "## cascades"
    for mode in background foreground orphan; do
        kubectl create configmap "owner-$mode" -n "$ns" > /dev/null
        local uid
        uid="$(kubectl get configmap "owner-$mode" -n "$ns" -o jsonpath='{.metadata.uid}')"
        kubectl apply -f - > /dev/null << EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: dep-$mode
  namespace: $ns
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner-$mode, uid: $uid, blockOwnerDeletion: true}
EOF
        k delete configmap "owner-$mode" -n "$ns" --cascade="$mode"
        if [[ "$mode" == orphan ]]; then
            until_ok 30 no_owners configmap "dep-$mode" -n "$ns"
        else
            until_ok 30 gone configmap "dep-$mode" -n "$ns"
        fi
        k get configmap "dep-$mode" -n "$ns" -o 'jsonpath={.metadata.name} owners={.metadata.ownerReferences}{"\n"}'
    done

    echo "## server-side apply from two managers"
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: %s}\ndata: {k: "1"}\n' "$ns" > "$work/one.yaml"
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: %s}\ndata: {k: "2"}\n' "$ns" > "$work/two.yaml"
    k apply --server-side --field-manager=alice -f "$work/one.yaml"
    k apply --server-side --field-manager=bob -f "$work/two.yaml"
    k apply --server-side --field-manager=bob --force-conflicts -f "$work/two.yaml"
    k get configmap shared -n "$ns" -o 'jsonpath={range .metadata.managedFields[*]}{.manager} {.operation} {.fieldsV1}{"\n"}{end}'

    echo "## dry runs"
    k create configmap dry -n "$ns" --from-literal=a=1 --dry-run=server -o name
    k label configmap shared -n "$ns" x=y --dry-run=server
    k annotate configmap shared -n "$ns" x=y --dry-run=server
    k patch configmap shared -n "$ns" -p '{"data":{"k":"3"}}' --dry-run=server
    k apply --server-side --field-manager=carol --force-conflicts --dry-run=server -f "$work/one.yaml"
    k delete configmap shared -n "$ns" --dry-run=server
    k delete configmap --all -n "$ns" --dry-run=server
    k get configmap -n "$ns" -o 'jsonpath={range .items[*]}{.metadata.name}={.data.k} {end}{"\n"}'

    echo "## a namespace whose content has a finalizer"
    kubectl create configmap keep -n "$ns" > /dev/null
    kubectl patch configmap keep -n "$ns" --type=merge -p '{"metadata":{"finalizers":["example.com/keep"]}}' > /dev/null
    k delete namespace "$ns" --wait=false
    until_ok 60 has_condition
    k get namespace "$ns" -o 'jsonpath={.status.phase}{"\n"}{range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}'
    k create configmap late -n "$ns"
    kubectl patch configmap keep -n "$ns" --type=merge -p '{"metadata":{"finalizers":null}}' > /dev/null
    until_ok 60 gone namespace "$ns"
    k get namespace "$ns"

    kubectl delete crd sessionwidgets.session.example.com > /dev/null
}

case $# in
1)
    KUBECONFIG="$1" session
    ;;
2)
    KUBECONFIG="$1" session > "$work/a.txt"
    KUBECONFIG="$2" session > "$work/b.txt"
    if diff -u --label "A ($1)" --label "B ($2)" "$work/a.txt" "$work/b.txt"; then
        echo "kubectl session: identical on both servers ($(grep -c '^\$ kubectl' "$work/a.txt") commands)"
    else
        exit 1
    fi
    ;;
*)
    echo "usage: $0 KUBECONFIG [KUBECONFIG_B]" >&2
    exit 2
    ;;
esac
