package main

import (
	"reflect"
	"strconv"
	"time"
)

// watchWait bounds how long the runner waits for events it expects. It only
// matters when a server does not send them; it never decides a pass.
const watchWait = 8 * time.Second

// catalogue is the list of scenarios, in run order. Each uses its own
// namespace and ConfigMaps (a plain namespaced type with validation).
var catalogue = []scenarioDef{
	{"not-found", "GET and DELETE of a missing object: 404 NotFound Status; unknown resources and groups", scNotFound},
	{"already-exists", "create of an existing name: 409 AlreadyExists", scAlreadyExists},
	{"conflict", "update with a stale resourceVersion: 409 Conflict", scConflict},
	{"invalid", "invalid objects: 422 Invalid with causes", scInvalid},
	{"bad-request", "bad label/field selectors and bodies: 400 BadRequest", scBadRequest},
	{"generate-name", "generateName: server-generated names", scGenerateName},
	{"list-rv", "list resourceVersion semantics: unset, 0, NotOlderThan, Exact", scListRV},
	{"pagination", "limit=2 pagination, remainingItemCount, continue reuse and snapshot", scPagination},
	{"expired-continue", "continue token from before a compaction: 410 Expired", scExpiredContinue},
	{"compacted-rv", "Exact list and watch from a compacted resourceVersion: 410", scCompactedRV},
	{"watch-events", "watch from a resourceVersion: ADDED, MODIFIED, DELETED in order", scWatchEvents},
	{"watch-from-0", "watch from \"0\": synthetic ADDED for existing objects", func(s *sc) { scWatchSynthetic(s, "0") }},
	{"watch-from-empty", "watch from \"\": synthetic ADDED for existing objects", func(s *sc) { scWatchSynthetic(s, "") }},
	{"bookmarks", "allowWatchBookmarks: bookmark shape and position", scBookmarks},
	{"initial-events-end", "sendInitialEvents=true: ADDED for each object, then the initial-events-end bookmark", scInitialEventsEnd},
	{"selector-watch", "label-selector watch: updates moving objects out of and into the selector", scSelectorWatch},
	{"field-selector-watch", "metadata.name field-selector watch (how single-object informers watch)", scFieldSelectorWatch},
	{"noop-update", "an update that changes nothing: same resourceVersion, no watch event", scNoopUpdate},
	{"finalizers", "delete with a finalizer: MODIFIED with deletionTimestamp, DELETED when the finalizer goes", scFinalizers},
	{"too-large-rv", "resourceVersion from the future: 504 Timeout with cause ResourceVersionTooLarge", scTooLargeRV},
	{"crd", "a CRD over the API, then its custom resources: discovery, structural pruning, defaults, required fields, the status subresource, a watch", scCRD},
	{"crd-validation", "a custom resource's value validations (numbers, strings, formats, arrays, objects, list-type set and map, allOf/anyOf/oneOf/not, nullable) on create, update and patch: 422 in kube-apiserver's words", scCRDValidation},
	{"crd-rules", "a custom resource's x-kubernetes-validations (CEL) rules on create, update and patch: message, messageExpression, fieldPath, reason, transition rules (oldSelf, map-list items), a missing field, rules blocked by type errors; a rule added after an object was stored (ratcheting, with its Warning)", scCRDRules},
	{"crd-rule-checks", "CRDs whose x-kubernetes-validations kube-apiserver refuses when written: a rule's own fields (message, reason, fieldPath), rules that do not compile (syntax, undefined fields, undeclared names, operators without an overload, not a bool, a messageExpression not a string, optionalOldSelf unused), rules estimated too costly (unbounded strings, lists and maps; a rule, a messageExpression, the schema's total; one version or several), oldSelf under a set list's items: 422 in its words; the same rules bounded, escaped property names, accepted", scCRDRuleChecks},
	{"crd-rules-generated", "120 CRDs (dryRun=All), each with one x-kubernetes-validations rule drawn from a grammar with a fixed seed over a spec of every kind CEL sees (well and badly typed comparisons, arithmetic, string functions, comprehensions, null, typos, undeclared names, messageExpressions): accepted or refused in kube-apiserver's words", scCRDRulesGenerated},
	{"crd-rules-quantity", "rules using Kubernetes' quantity library (quantity, isQuantity, isLessThan, compareTo, ==, isInteger, asInteger, add, sub) on objects (dryRun=All) with 16 quantities: suffixes, exponents, fractions, signs, values past int64, no quantity at all", scCRDRulesQuantity},
	{"crd-rules-libraries", "rules using Kubernetes' IP, CIDR, lists and regex libraries, duration() and a duration-format string, on objects (dryRun=All) that pass and break each: unmasked and too-large pools, loopback, IPv6, malformed, non-canonical and IPv4-mapped addresses, unsorted and empty lists, no duration", scCRDRulesLibraries},
	{"crd-rules-url-semver", "rules using Kubernetes' URL library (isURL, url, getScheme, getHost, getHostname, getPort, getEscapedPath, getQuery) and semver library (isSemver, semver, normalized, major, minor, compareTo, isGreaterThan, isLessThan) on objects (dryRun=All) that pass and break each, and the evaluation errors of url() and semver() on what is neither", scCRDRulesURLSemver},
	{"crd-rules-extensions", "116 CRDs (dryRun=All), each with one rule using two-variable comprehensions (all, exists, existsOne, transformList, transformMap, transformMapEntry), the sets and format libraries, sortBy, flatten, first and last, list and map literals of mixed types, or an item of a list or map the rule builds: accepted or refused as kube-apiserver types and prices it; then such rules on objects (dryRun=All) that pass and break each: a duplicate key in transformMapEntry (the evaluation error), unsorted ports, team and owner labels, sets of names, names of the dns1123Label and labelValue formats (messageExpression with the first complaint)", scCRDRulesExtensions},
	{"admission-policy", "ValidatingAdmissionPolicies bound to the namespace (labelled for them): validations with message, messageExpression and reason, variables, matchConditions, objectSelector, params from a custom resource (missing, then present), oldObject, DELETE, failurePolicy Fail and Ignore over a failing expression, Warn and Audit warnings, resourceNames and excludeResourceRules, a dry run, and a Deployment scaled through /scale (not matched by a rule on deployments)", scAdmissionPolicy},
	{"mutating-admission-policy", "MutatingAdmissionPolicies bound to the namespace (labelled for them): an ApplyConfiguration adding a label and a sidecar to Deployments (create, get, dry run, apply, patch) under a ValidatingAdmissionPolicy requiring the label, a value on an atomic list refused (Fail) and passed over (Ignore), JSONPatch with variables, escapeKey, a failed test and a missing path, IfNeeded policies run again, and the policy and binding as stored", scMutatingPolicy},
	{"pod-defaults", "a Pod and each kind holding a pod template (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, ReplicationController, PodTemplate) created (dryRun=All) with one pod spec of every defaulted shape: the pod spec as stored (the ServiceAccount admission's token volume left out), each template with its metadata, and the status each starts with (sent with one); a Job's generated selector and labels, a DaemonSet's template generation annotation on create and after template and other changes", scPodDefaults},
	{"services", "Services of each type created and read back, what was allocated shown by its shape: defaults, a cluster IP and its family, node ports, headless and ExternalName, the status; a PUT without the allocated values (kept), a server-side apply creating one and the same apply again (no change), a cluster IP and a node port already in use (422)", scServices},
	{"cluster-defaults", "what every cluster holds and says unasked: the kubernetes Service in default with its Endpoints and EndpointSlice (addresses and the server's port by shape), and the Warning of deprecated API versions on every verb: v1 Endpoints, v1 ComponentStatus, a CRD's deprecated versions (default wording naming the newest served one, its own deprecationWarning, none newer); deprecationWarnings kube-apiserver refuses (empty, on a version not deprecated, too long, a tab, a newline); the ServiceAccount admission's projected token volume in created Pods (the Pod's or its account's automountServiceAccountToken, a path already mounted, init containers) and their managedFields", scClusterDefaults},
	{"service-account-admission", "the ServiceAccount admission on created Pods beyond the token volume: an account that does not exist (403 in its words; a generateName, a dry run, an apply, a Pod also invalid), the account's imagePullSecrets copied into a Pod without its own (none, empty, an apply), an empty account name, and mirror pods (nothing added; an account, a pull secret, a secret volume, a secret in the environment, a projected token refused)", scServiceAccountAdmission},
	{"created-statuses", "the status more built-in kinds start with whatever they were created with: a PodDisruptionBudget, a HorizontalPodAutoscaler, an Ingress, a PersistentVolumeClaim (created and a dry run), a PersistentVolume and a VolumeAttachment (dry runs)", scCreatedStatuses},
	{"admission-webhooks", "validating and mutating admission webhooks (an HTTPS server of the recorder's, by URL and caBundle) on configmaps in the scenario's namespace: the configurations as stored, creates allowed, denied, mutated and with a generateName, an update, patches and an apply denied, a patch and an apply that creates allowed, a dry run, deletes (a protected object), denials with a code and without a status, an answer with the wrong uid, an unreachable webhook under failurePolicy Fail and Ignore; each step with the reviews sent (but uid and userInfo) and the warnings", scAdmissionWebhooks},
	{"conversion-webhook", "a CRD with v1 served and v2 stored, converted by a webhook (an HTTPS server of the recorder's, by URL and caBundle): creates, gets, lists, an update, patches, an apply, status, a dry run, tables, metadata only, a watch and a delete through both versions; the webhook failing, answering with the wrong uid, a renamed object, the version unchanged, no objects, an invalid label, and unreachable", scConversionWebhook},
	{"crd-schema-change", "custom objects stored, then their CRD's schema changed under them (a field no longer declared, a new default): reads and lists through the new schema at the old resourceVersions, a watch open across the change, a watch from before it, a no-op update of an object as read (twice), and reads once the schema is changed back", scCRDSchemaChange},
	{"crd-storage-version-change", "two CRDs with v1 and v2 served and v1 stored (conversion strategy None, and a webhook of the recorder's), an object written through v1, then v2 made the storage version: storedVersions, the object (still stored in v1) read through both versions, listed and watched through v2, an object written through v1 after the change, a patch through v2 and reads through v1 after it", scCRDStorageVersionChange},
	{"field-validation", "unknown and duplicate fields in written objects (built-in kinds and custom resources): dropped, and fieldValidation Warn (Warning headers), Strict (400 strict decoding error), Ignore; an apply naming an undeclared field (500)", scFieldValidation},
	{"dry-run", "dryRun=All on every write verb: the answers, then nothing stored, no resourceVersion handed out, no watch event", scDryRun},
	{"ssa", "server-side apply field ownership: conflicts (409 with causes), force, shared ownership, an Update taking a field over, managedFields", scSSA},
	{"token", "TokenRequest for a ServiceAccount: the token's shape, defaults, bounds, a missing ServiceAccount, the token used as a bearer", scToken},
	{"rbac", "RBAC through impersonation: a ServiceAccount's Role and RoleBindings, a user and a group, the bootstrap view role, a binding to a missing role, impersonation refused, access reviews (self, subject, local, rules), a ClusterRole aggregated into view, RBAC names", scRBAC},
	{"rbac-escalation", "RBAC's escalation prevention for an operator writing Roles and RoleBindings (its ServiceAccount, impersonated): a role with rules it holds and with more (403 naming what it lacks), a patch adding a verb, bindings to roles it holds and does not (its own ClusterRole, the bootstrap view role), a binding to a missing role, finalizers alone, the bind verb on one ClusterRole, the escalate verb on roles, ClusterRoles with rules not held and with an aggregationRule", scRBACEscalation},
	{"anonymous", "requests without credentials (system:anonymous: 403 in the authorizer's words, health and version open) and with a wrong token (401 everywhere)", scAnonymous},
	{"openapi", "OpenAPI v3 index and core/v1 schema (Container: properties and x-kubernetes extensions), v2's Pod", scOpenAPI},
	{"openapi-crd", "a CRD's schema in OpenAPI v3 (kubectl explain on a custom resource)", scOpenAPICRD},
	{"gc-background", "garbage collection, background propagation: dependents deleted after the owner; a second live owner keeps a dependent", scGCBackground},
	{"gc-foreground", "garbage collection, foreground propagation: foregroundDeletion finalizer, blockOwnerDeletion, a dependent with its own finalizer holding the owner", scGCForeground},
	{"gc-orphan", "garbage collection, orphan propagation: orphan finalizer, references removed, dependents kept", scGCOrphan},
	{"gc-owners", "garbage collection of dangling references (no such owner, a wrong uid) and of dependents of a cluster-scoped owner", scGCOwners},
	{"gc-custom-resources", "garbage collection with custom resources as owner and as dependent", scGCCustomResources},
	{"shard-list", "sharded lists by uid (KEP-5866): halves, ranges joined by ||, overlapping ranges, limit/continue, with a label selector, resourceVersion=0, shardInfo; get and deletecollection", scShardList},
	{"shard-watch", "a watch with a uid shard selector: updates, creates and deletes inside the shard seen, outside not; watch from 0", scShardWatch},
	{"shard-streaming", "a streaming list (sendInitialEvents, NotOlderThan, bookmarks) with a uid shard selector", scShardStreaming},
	{"shard-namespace", "shards by namespace: cluster-wide list, paging, watch and streaming list; namespaced lists; namespaces themselves", scShardNamespace},
	{"shard-invalid", "malformed shard selectors on a list, a watch and a streaming list: the exact errors", scShardInvalid},
	// Last: it deletes (tries to delete) the immortal namespaces.
	{"namespace-lifecycle", "namespace lifecycle: 404 into a missing namespace, Terminating with conditions while content has finalizers, 403 for new content, gone when empty; immortal namespaces", scNamespaceLifecycle},
}

func scNotFound(s *sc) {
	s.call("get-missing", "GET", s.cm("missing"), nil)
	s.call("delete-missing", "DELETE", s.cm("missing"), nil)
	s.call("update-missing", "PUT", s.cm("missing"), configMap("missing", nil, map[string]string{"k": "v"}))
	s.call("get-in-missing-namespace", "GET", "/api/v1/namespaces/kd-"+s.run+"-nowhere/configmaps/missing", nil)
	// paths with no object behind them: an unknown resource of a built-in group is a 404
	// Status; an unknown group is the mux's plain-text "404 page not found"
	s.call("get-unknown-resource", "GET", "/api/v1/namespaces/default/kdthings", nil)
	s.call("get-unknown-version", "GET", "/apis/apps/v0/deployments", nil)
	s.call("get-unknown-group", "GET", "/apis/kd-nope.example.com/v1/things", nil)
}

func scAlreadyExists(s *sc) {
	s.call("create", "POST", s.cms(""), configMap("a", nil, map[string]string{"k": "v"}))
	s.call("create-again", "POST", s.cms(""), configMap("a", nil, map[string]string{"k": "other"}))
	s.call("get", "GET", s.cm("a"), nil)
}

func scConflict(s *sc) {
	created := s.call("create", "POST", s.cms(""), configMap("a", nil, map[string]string{"k": "v1"}))
	first := created.body
	upd := configMap("a", nil, map[string]string{"k": "v2"})
	upd["metadata"].(map[string]any)["resourceVersion"] = rvOf(created)
	s.call("update", "PUT", s.cm("a"), upd)
	stale := configMap("a", nil, map[string]string{"k": "v3"})
	stale["metadata"].(map[string]any)["resourceVersion"] = str(first, "metadata", "resourceVersion")
	s.call("update-stale", "PUT", s.cm("a"), stale)
	s.call("update-unconditional", "PUT", s.cm("a"), configMap("a", nil, map[string]string{"k": "v4"}))
	del := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1",
		"preconditions": map[string]any{"resourceVersion": str(first, "metadata", "resourceVersion")}}
	s.call("delete-stale-precondition", "DELETE", s.cm("a"), del)
	s.call("update-name-mismatch", "PUT", s.cm("a"), configMap("b", nil, map[string]string{"k": "v5"}))
}

func scInvalid(s *sc) {
	s.call("bad-name", "POST", s.cms(""), configMap("Bad_Name", nil, nil))
	s.call("bad-data-key", "POST", s.cms(""), configMap("a", nil, map[string]string{"bad key!": "v"}))
	s.call("no-name", "POST", s.cms(""), map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{}})
	s.call("bad-label", "POST", s.cms(""), configMap("b", map[string]string{"bad label!": "x"}, nil))
}

func scBadRequest(s *sc) {
	s.call("list-bad-label-selector", "GET", s.cms(q("labelSelector", "a in (")), nil)
	s.call("list-bad-field-selector", "GET", s.cms(q("fieldSelector", "spec.nothing=x")), nil)
	s.call("watch-bad-label-selector", "GET", s.cms(q("watch", "1", "labelSelector", "a in (")), nil)
	s.call("list-bad-resource-version", "GET", s.cms(q("resourceVersion", "abc")), nil)
	s.call("list-bad-limit", "GET", s.cms(q("limit", "abc")), nil)
	s.call("list-match-without-rv", "GET", s.cms(q("resourceVersionMatch", "Exact")), nil)
	s.call("list-bad-continue", "GET", s.cms(q("limit", "1", "continue", "not-a-token")), nil)
	s.call("create-not-json", "POST", s.cms(""), "this is not an object")
}

func scGenerateName(s *sc) {
	cm := configMap("", nil, map[string]string{"k": "v"})
	md := cm["metadata"].(map[string]any)
	delete(md, "name")
	md["generateName"] = "gen-"
	r := s.call("create", "POST", s.cms(""), cm)
	name := str(r.body, "metadata", "name")
	s.fact("nameHasPrefixAndFiveMore", len(name) == len("gen-")+5 && name[:4] == "gen-")
	s.call("get", "GET", s.cm(name), nil)
}

func scListRV(s *sc) {
	a := s.call("create-a", "POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	b := s.call("create-b", "POST", s.cms(""), configMap("b", nil, map[string]string{"k": "1"}))
	l := s.call("list", "GET", s.cms(""), nil)
	s.fact("listRVAtLeastLastWrite", rvNum(rvOf(l)) >= rvNum(rvOf(b)))
	s.call("list-rv-0", "GET", s.cms(q("resourceVersion", "0")), nil)
	s.call("list-not-older-than-old", "GET", s.cms(q("resourceVersion", rvOf(a), "resourceVersionMatch", "NotOlderThan")), nil)
	ex := s.call("list-exact-old", "GET", s.cms(q("resourceVersion", rvOf(a), "resourceVersionMatch", "Exact")), nil)
	s.fact("exactListRVEqualsRequested", rvOf(ex) == rvOf(a))
	s.call("get-rv-0", "GET", s.cm("a")+"?"+q("resourceVersion", "0"), nil)
	s.call("get-rv-old", "GET", s.cm("a")+"?"+q("resourceVersion", rvOf(a)), nil)
}

func scPagination(s *sc) {
	var lastWrite string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		lastWrite = rvOf(s.setup("POST", s.cms(""), configMap(n, nil, map[string]string{"k": n})))
	}
	p1 := s.call("page-1", "GET", s.cms(q("limit", "2")), nil)
	s.fact("listRVAtLeastLastWrite", rvNum(rvOf(p1)) >= rvNum(lastWrite))
	tok1 := str(p1.body, "metadata", "continue")
	p2 := s.call("page-2", "GET", s.cms(q("limit", "2", "continue", tok1)), nil)
	s.fact("sameRVAsPage1", rvOf(p2) == rvOf(p1))
	p3 := s.call("page-3", "GET", s.cms(q("limit", "2", "continue", str(p2.body, "metadata", "continue"))), nil)
	s.fact("sameRVAsPage1", rvOf(p3) == rvOf(p1))
	again := s.call("page-2-token-reused", "GET", s.cms(q("limit", "2", "continue", tok1)), nil)
	s.fact("sameItemsAsPage2", reflect.DeepEqual(names(again.body), names(p2.body)))
	// A write after the first page: continuing still reads the first page's snapshot.
	s.setup("POST", s.cms(""), configMap("bb", nil, map[string]string{"k": "bb"}))
	s.setup("DELETE", s.cm("c"), nil)
	snap := s.call("page-2-after-writes", "GET", s.cms(q("limit", "2", "continue", tok1)), nil)
	s.fact("sameItemsAsPage2", reflect.DeepEqual(names(snap.body), names(p2.body)))
	s.fact("sameRVAsPage1", rvOf(snap) == rvOf(p1))
	s.syncCache()
	s.call("limit-with-rv-0", "GET", s.cms(q("limit", "2", "resourceVersion", "0")), nil)
	s.call("limit-larger-than-count", "GET", s.cms(q("limit", "100")), nil)
}

func scExpiredContinue(s *sc) {
	for _, n := range []string{"a", "b", "c"} {
		s.setup("POST", s.cms(""), configMap(n, nil, map[string]string{"k": n}))
	}
	p1 := s.call("page-1", "GET", s.cms(q("limit", "1")), nil)
	s.setup("PUT", s.cm("b"), configMap("b", nil, map[string]string{"k": "changed"}))
	s.doCompact()
	exp := s.call("continue-after-compaction", "GET", s.cms(q("limit", "1", "continue", str(p1.body, "metadata", "continue"))), nil)
	if tok := str(exp.body, "metadata", "continue"); tok != "" {
		s.call("inconsistent-continue", "GET", s.cms(q("limit", "5", "continue", tok)), nil)
	}
}

func scCompactedRV(s *sc) {
	a := s.call("create", "POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	s.setup("PUT", s.cm("a"), configMap("a", nil, map[string]string{"k": "2"}))
	// One more write, so the compaction revision lies strictly past a's
	// update. (Watching from exactly one below the compaction revision is an
	// edge where kube-apiserver without watch cache answers an ERROR event
	// with a 500 "PrevKv=nil" instead of a 410, and whether it is hit on a
	// real server depends on unrelated writes: not a stable observation.)
	s.setup("POST", s.cms(""), configMap("z", nil, map[string]string{"k": "1"}))
	s.doCompact()
	s.call("list-exact-compacted", "GET", s.cms(q("resourceVersion", rvOf(a), "resourceVersionMatch", "Exact")), nil)
	s.call("list-not-older-than-compacted", "GET", s.cms(q("resourceVersion", rvOf(a), "resourceVersionMatch", "NotOlderThan")), nil)
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(a)))
	h := s.watch(path)
	h.collect(watchWait, untilN(1))
	s.recordWatch("watch-from-compacted", path, h)
}

func scWatchEvents(s *sc) {
	x := s.call("create-x", "POST", s.cms(""), configMap("x", nil, map[string]string{"k": "1"}))
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(x)))
	h := s.watch(path)
	s.setup("POST", s.cms(""), configMap("y", map[string]string{"app": "y"}, map[string]string{"k": "1"}))
	s.setup("PUT", s.cm("y"), configMap("y", map[string]string{"app": "y"}, map[string]string{"k": "2"}))
	s.setup("DELETE", s.cm("y"), nil)
	s.setup("PUT", s.cm("x"), configMap("x", nil, map[string]string{"k": "2"}))
	h.collect(watchWait, untilN(4))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))
	s.call("delete-x-response", "DELETE", s.cm("x"), nil)
}

func scWatchSynthetic(s *sc, rv string) {
	s.setup("POST", s.cms(""), configMap("b", nil, map[string]string{"k": "1"}))
	s.setup("POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	s.syncCache()
	path := s.cms(q("watch", "1"))
	if rv != "" {
		path = s.cms(q("watch", "1", "resourceVersion", rv))
	}
	h := s.watch(path)
	// a synthetic ADDED for each of a, b (and kube-root-ca.crt), then a's update
	h.collect(watchWait, untilN(2+s.rootCAs))
	s.setup("PUT", s.cm("a"), configMap("a", nil, map[string]string{"k": "2"}))
	h.collect(watchWait, untilN(3+s.rootCAs))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))
}

func scBookmarks(s *sc) {
	a := s.call("create", "POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	// The watch cache sends a bookmark 2s before the watch's deadline; a
	// 4s watch therefore ends with one. Read until the server closes.
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(a), "allowWatchBookmarks", "true", "timeoutSeconds", "4"))
	h := s.watch(path)
	upd := s.setup("PUT", s.cm("a"), configMap("a", nil, map[string]string{"k": "2"}))
	h.collect(watchWait, nil)
	res := h.close()
	var plain []any
	var bookmarks []map[string]any
	for _, e := range res.events {
		if str(e, "type") == "BOOKMARK" {
			bookmarks = append(bookmarks, e)
		} else {
			plain = append(plain, e)
		}
	}
	st := &step{Step: "watch", Request: "WATCH " + path, Status: res.status, ContentType: res.contentType,
		Body: res.body, Events: plain, Ended: res.ended}
	s.res.Steps = append(s.res.Steps, st)
	s.fact("bookmarkSeen", len(bookmarks) > 0)
	if len(bookmarks) > 0 {
		b := bookmarks[len(bookmarks)-1]
		s.fact("lastBookmark", b)
		s.fact("lastBookmarkRVAtLeastLastEvent", rvNum(str(b, "object", "metadata", "resourceVersion")) >= rvNum(rvOf(upd)))
	}
	// Without allowWatchBookmarks, no bookmark ever.
	path2 := s.cms(q("watch", "1", "resourceVersion", rvOf(upd), "timeoutSeconds", "3"))
	h2 := s.watch(path2)
	h2.collect(watchWait, nil)
	res2 := s.recordWatch("watch-without-bookmarks", path2, h2)
	s.fact("bookmarkSeen", countType(res2.events, "BOOKMARK") > 0)
}

func scInitialEventsEnd(s *sc) {
	for _, n := range []string{"c", "a", "b"} {
		s.setup("POST", s.cms(""), configMap(n, map[string]string{"app": n}, map[string]string{"k": "1"}))
	}
	path := s.cms(q("watch", "1", "sendInitialEvents", "true", "resourceVersionMatch", "NotOlderThan", "allowWatchBookmarks", "true"))
	h := s.watch(path)
	h.collect(watchWait, func(evs []map[string]any) bool { return len(evs) > 0 && isInitialEventsEnd(evs[len(evs)-1]) })
	endRV := ""
	if n := len(h.res.events); n > 0 && isInitialEventsEnd(h.res.events[n-1]) {
		endRV = str(h.res.events[n-1], "object", "metadata", "resourceVersion")
	}
	upd := s.setup("PUT", s.cm("b"), configMap("b", map[string]string{"app": "b"}, map[string]string{"k": "2"}))
	h.collect(watchWait, func(evs []map[string]any) bool { return countType(evs, "MODIFIED") >= 1 })
	res := s.recordWatch("watch-send-initial-events", path, h)
	var plain []map[string]any
	for _, e := range res.events {
		if str(e, "type") != "BOOKMARK" || isInitialEventsEnd(e) {
			plain = append(plain, e)
		}
	}
	// Periodic bookmarks may interleave; the sequence without them is what
	// clients depend on.
	s.fact("typesWithoutPeriodicBookmarks", eventTypes(plain))
	s.fact("endBookmarkRVBeforeUpdate", endRV != "" && rvNum(endRV) < rvNum(rvOf(upd)))

	sel := s.cms(q("watch", "1", "sendInitialEvents", "true", "resourceVersionMatch", "NotOlderThan", "allowWatchBookmarks", "true", "labelSelector", "app=a"))
	h2 := s.watch(sel)
	h2.collect(watchWait, func(evs []map[string]any) bool { return len(evs) > 0 && isInitialEventsEnd(evs[len(evs)-1]) })
	s.recordWatch("watch-send-initial-events-selector", sel, h2)

	for _, v := range []struct{ name, query string }{
		{"no-rv-match", q("watch", "1", "sendInitialEvents", "true", "allowWatchBookmarks", "true")},
		{"no-bookmarks", q("watch", "1", "sendInitialEvents", "true", "resourceVersionMatch", "NotOlderThan")},
		{"exact-match", q("watch", "1", "sendInitialEvents", "true", "resourceVersionMatch", "Exact", "allowWatchBookmarks", "true", "resourceVersion", "1")},
		{"on-list", q("sendInitialEvents", "true", "resourceVersionMatch", "NotOlderThan")},
	} {
		p := s.cms(v.query)
		hv := s.watch(p)
		hv.collect(2*time.Second, func(evs []map[string]any) bool { return len(evs) > 0 })
		s.recordWatch("invalid-"+v.name, p, hv)
	}
}

func scSelectorWatch(s *sc) {
	s.setup("POST", s.cms(""), configMap("a", map[string]string{"app": "a"}, map[string]string{"k": "1"}))
	b := s.setup("POST", s.cms(""), configMap("b", map[string]string{"app": "b"}, map[string]string{"k": "1"}))
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(b), "labelSelector", "app=a"))
	h := s.watch(path)
	s.setup("PUT", s.cm("a"), configMap("a", map[string]string{"app": "b"}, map[string]string{"k": "2"})) // leaves: DELETED
	s.setup("PUT", s.cm("b"), configMap("b", map[string]string{"app": "a"}, map[string]string{"k": "2"})) // enters: ADDED
	s.setup("PUT", s.cm("b"), configMap("b", map[string]string{"app": "a"}, map[string]string{"k": "3"})) // MODIFIED
	s.setup("PUT", s.cm("a"), configMap("a", map[string]string{"app": "b"}, map[string]string{"k": "3"})) // outside: nothing
	s.setup("DELETE", s.cm("b"), nil)                                                                     // DELETED
	h.collect(watchWait, untilN(4))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))

	s.syncCache()
	initial := s.cms(q("watch", "1", "resourceVersion", "0", "labelSelector", "app=b"))
	h2 := s.watch(initial)
	h2.collect(watchWait, untilN(1))
	s.recordWatch("watch-from-0-with-selector", initial, h2)
}

func scFieldSelectorWatch(s *sc) {
	s.setup("POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	s.setup("POST", s.cms(""), configMap("b", nil, map[string]string{"k": "1"}))
	l := s.call("list-by-name", "GET", s.cms(q("fieldSelector", "metadata.name=b")), nil)
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(l), "fieldSelector", "metadata.name=b"))
	h := s.watch(path)
	s.setup("PUT", s.cm("a"), configMap("a", nil, map[string]string{"k": "2"}))
	s.setup("PUT", s.cm("b"), configMap("b", nil, map[string]string{"k": "2"}))
	s.setup("DELETE", s.cm("a"), nil)
	s.setup("DELETE", s.cm("b"), nil)
	h.collect(watchWait, untilN(2))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))
}

func scNoopUpdate(s *sc) {
	a := s.call("create", "POST", s.cms(""), configMap("a", map[string]string{"x": "y"}, map[string]string{"k": "1"}))
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(a)))
	h := s.watch(path)
	same := configMap("a", map[string]string{"x": "y"}, map[string]string{"k": "1"})
	same["metadata"].(map[string]any)["resourceVersion"] = rvOf(a)
	noop := s.call("update-unchanged", "PUT", s.cm("a"), same)
	s.fact("resourceVersionUnchanged", rvOf(noop) == rvOf(a))
	s.call("update-changed", "PUT", s.cm("a"), configMap("a", map[string]string{"x": "y"}, map[string]string{"k": "2"}))
	h.collect(watchWait, untilN(1))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))
}

func scFinalizers(s *sc) {
	cm := configMap("a", nil, map[string]string{"k": "1"})
	cm["metadata"].(map[string]any)["finalizers"] = []string{"kinformer.dev/hold"}
	a := s.call("create", "POST", s.cms(""), cm)
	path := s.cms(q("watch", "1", "resourceVersion", rvOf(a)))
	h := s.watch(path)
	d := s.call("delete", "DELETE", s.cm("a"), nil)
	s.call("get-terminating", "GET", s.cm("a"), nil)
	s.call("delete-again", "DELETE", s.cm("a"), nil)
	// Remove the finalizer: the object goes.
	rel := configMap("a", nil, map[string]string{"k": "1"})
	md := rel["metadata"].(map[string]any)
	md["finalizers"] = []string{}
	md["resourceVersion"] = rvOf(d)
	s.call("remove-finalizer", "PUT", s.cm("a"), rel)
	s.call("get-gone", "GET", s.cm("a"), nil)
	h.collect(watchWait, untilN(2))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))
}

func scTooLargeRV(s *sc) {
	a := s.call("create", "POST", s.cms(""), configMap("a", nil, map[string]string{"k": "1"}))
	future := strconv.FormatInt(rvNum(rvOf(a))+1000000, 10)
	s.call("list-not-older-than-future", "GET", s.cms(q("resourceVersion", future, "resourceVersionMatch", "NotOlderThan")), nil)
	s.call("list-future-no-match", "GET", s.cms(q("resourceVersion", future)), nil)
	s.call("list-exact-future", "GET", s.cms(q("resourceVersion", future, "resourceVersionMatch", "Exact")), nil)
	s.call("get-future", "GET", s.cm("a")+"?"+q("resourceVersion", future), nil)
}

// widgetCRD registers the Widget CustomResourceDefinition through the API (its group carries the
// run id, so every run has its own) and waits until its resource is served in the scenario's
// namespace; the CRD is deleted when the scenario ends (not compared: its teardown is
// asynchronous on a real server). Its group is name + ".example.com" (a CRD's name is its
// group's, so two scenarios of a run need two names). It returns the group and the namespaced
// collection path.
func (s *sc) widgetCRD(name string) (group, base string) {
	group = name + ".example.com"
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": []string{"wd"}},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type": "object", "required": []string{"size"},
							"properties": map[string]any{
								"size":  map[string]any{"type": "integer"},
								"color": map[string]any{"type": "string", "default": "blue"},
							},
						},
						"status": map[string]any{
							"type":       "object",
							"properties": map[string]any{"ready": map[string]any{"type": "boolean"}},
						},
					},
				}},
			}},
		},
	}
	return group, s.registerCRD(group, "widgets", crd)
}

// registerCRD creates a CRD (not compared), deletes it when the scenario ends and waits until
// its v1 resource is served in the scenario's namespace; it returns that collection's path.
func (s *sc) registerCRD(group, plural string, crd map[string]any) (base string) {
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	s.setup("POST", crds, crd)
	s.cleanups = append(s.cleanups, func() { _, _ = s.t.do(s.ctx, "DELETE", crds+"/"+plural+"."+group, nil) })
	base = "/apis/" + group + "/v1/namespaces/" + s.ns + "/" + plural
	served := false
	for i := 0; i < 100 && !served; i++ {
		if r, err := s.t.do(s.ctx, "GET", base, nil); err == nil && r.status == 200 {
			served = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !served {
		s.fail("the CRD's resource was not served within 10s")
	}
	return base
}

// scCRD registers a CustomResourceDefinition through the API, waits until its resource is
// served, then exercises it as an operator's controller would.
func scCRD(s *sc) {
	group, base := s.widgetCRD("kd-" + s.run)
	widget := func(name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	s.call("discovery", "GET", "/apis/"+group+"/v1", nil)
	a := s.call("create-pruned-and-defaulted", "POST", base, widget("a", map[string]any{"size": 3, "dropped": true}))
	s.call("create-missing-required", "POST", base, widget("b", map[string]any{"color": "red"}))
	s.call("create-wrong-type", "POST", base, widget("c", map[string]any{"size": "three"}))
	path := base + "?" + q("watch", "1", "resourceVersion", rvOf(a))
	h := s.watch(path)
	st := widget("a", map[string]any{"size": 3})
	st["status"] = map[string]any{"ready": true}
	st["metadata"].(map[string]any)["resourceVersion"] = rvOf(a)
	s.call("update-status", "PUT", base+"/a/status", st)
	s.call("get", "GET", base+"/a", nil)
	s.call("list", "GET", base, nil)
	// Subresources the CRD does not define: its handler answers the object not
	// found, for any verb, there or not; parts after one it defines are ignored.
	s.call("unknown-subresource", "GET", base+"/a/foo", nil)
	s.call("unknown-subresource-missing", "DELETE", base+"/missing/foo", nil)
	s.call("status-extra-parts", "GET", base+"/a/status/extra", nil)
	s.call("delete", "DELETE", base+"/a", nil)
	h.collect(watchWait, untilN(2))
	res := s.recordWatch("watch", path, h)
	s.fact("types", eventTypes(res.events))
}
