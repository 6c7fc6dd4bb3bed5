//! The server's own metrics at `/metrics` (Prometheus text format), named as kube-apiserver
//! names them: `apiserver_request_total{verb,group,version,resource,subresource,scope,code}`
//! and the gauge of open watches,
//! `apiserver_longrunning_requests{verb="WATCH",group,version,resource,subresource,scope,component="apiserver"}`
//! (kube-apiserver's `staging/src/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go`, which
//! tracks watches and other long-running requests there; here only watches run long).

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Labels of `apiserver_request_total`, as kube-apiserver reports them (`verb` is the HTTP
/// method refined to LIST, WATCH or APPLY; `scope` is `resource`, `namespace` or `cluster`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestLabels {
    pub(crate) verb: &'static str,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) scope: &'static str,
    pub(crate) code: u16,
}

/// Labels of `apiserver_longrunning_requests`, as kube-apiserver reports them (`component` is
/// always `apiserver`).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct LongRunningLabels {
    pub(crate) verb: &'static str,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) scope: &'static str,
    pub(crate) component: &'static str,
}

/// The metrics registry and its families.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    longrunning: Family<LongRunningLabels, Gauge>,
    /// Open watches by resource (`plural` or `plural.group`), for
    /// [`RunningServer::open_watches`](crate::RunningServer::open_watches).
    open: Arc<Mutex<std::collections::HashMap<String, usize>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, group, version, resource, scope, subresource and HTTP response code.",
            requests.clone(),
        );
        let longrunning = Family::<LongRunningLabels, Gauge>::default();
        registry.register(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
            longrunning.clone(),
        );
        Metrics {
            registry,
            requests,
            longrunning,
            open: Arc::default(),
        }
    }
}

/// One open watch, counted in `apiserver_longrunning_requests` until dropped. The response
/// body stream owns it, so the count falls when the stream ends or the client goes away.
#[derive(Debug)]
pub(crate) struct OpenWatch {
    gauge: Gauge,
    resource: String,
    open: Arc<Mutex<std::collections::HashMap<String, usize>>>,
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.gauge.dec();
        let mut open = self.open.lock();
        if let Some(n) = open.get_mut(&self.resource) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.resource);
            }
        }
    }
}

impl Metrics {
    /// Counts one served resource request.
    pub(crate) fn count(&self, labels: RequestLabels) {
        self.requests.get_or_create(&labels).inc();
    }

    /// Counts a watch as open until the returned guard is dropped. `labels.verb` should be
    /// `WATCH`; `component` is set here.
    pub(crate) fn watch_opened(&self, mut labels: LongRunningLabels) -> OpenWatch {
        labels.component = "apiserver";
        let resource = if labels.group.is_empty() {
            labels.resource.clone()
        } else {
            format!("{}.{}", labels.resource, labels.group)
        };
        let gauge = self.longrunning.get_or_create(&labels).clone();
        gauge.inc();
        *self.open.lock().entry(resource.clone()).or_default() += 1;
        OpenWatch {
            gauge,
            resource,
            open: self.open.clone(),
        }
    }

    /// Open watches of `resource` (`plural` for the core group, else `plural.group`), or of
    /// every resource (`None`).
    pub(crate) fn open_watches(&self, resource: Option<&str>) -> usize {
        let open = self.open.lock();
        match resource {
            None => open.values().sum(),
            Some(r) => open.get(r).copied().unwrap_or(0),
        }
    }

    /// The text exposition.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_by_labels() {
        let m = Metrics::default();
        let l = RequestLabels {
            verb: "LIST",
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: String::new(),
            scope: "cluster",
            code: 200,
        };
        m.count(l.clone());
        m.count(l);
        assert_eq!(m.open_watches(None), 0);
        let text = m.encode();
        assert!(
            text.contains(r#"apiserver_request_total{verb="LIST",group="",version="v1",resource="pods",subresource="",scope="cluster",code="200"} 2"#),
            "{text}"
        );
    }

    #[test]
    fn open_watches_counted_until_the_guard_drops() {
        let m = Metrics::default();
        let labels = |resource: &str, group: &str| LongRunningLabels {
            verb: "WATCH",
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            subresource: String::new(),
            scope: "namespace",
            component: "",
        };
        let a = m.watch_opened(labels("configmaps", ""));
        let b = m.watch_opened(labels("configmaps", ""));
        let c = m.watch_opened(labels("deployments", "apps"));
        assert_eq!(m.open_watches(None), 3);
        assert_eq!(m.open_watches(Some("configmaps")), 2);
        assert_eq!(m.open_watches(Some("deployments.apps")), 1);
        let series = r#"apiserver_longrunning_requests{verb="WATCH",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver"}"#;
        assert!(
            m.encode().contains(&format!("{series} 2")),
            "{}",
            m.encode()
        );
        drop(a);
        drop(c);
        assert_eq!(m.open_watches(Some("configmaps")), 1);
        assert_eq!(m.open_watches(Some("deployments.apps")), 0);
        drop(b);
        assert_eq!(m.open_watches(None), 0);
        assert!(
            m.encode().contains(&format!("{series} 0")),
            "{}",
            m.encode()
        );
    }
}
