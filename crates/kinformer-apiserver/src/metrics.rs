//! The server's own metrics at `/metrics` (Prometheus text format), named as kube-apiserver
//! names them: `apiserver_request_total{verb,group,version,resource,subresource,scope,code}`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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

/// The metrics registry and its families.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
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
        Metrics { registry, requests }
    }
}

impl Metrics {
    /// Counts one served resource request.
    pub(crate) fn count(&self, labels: RequestLabels) {
        self.requests.get_or_create(&labels).inc();
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
        let text = m.encode();
        assert!(
            text.contains(r#"apiserver_request_total{verb="LIST",group="",version="v1",resource="pods",subresource="",scope="cluster",code="200"} 2"#),
            "{text}"
        );
    }
}
