//! Embedded Kubernetes API server (work in progress).
