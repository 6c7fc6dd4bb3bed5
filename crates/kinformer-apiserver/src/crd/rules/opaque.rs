//! The CEL value traits of the Kubernetes libraries' own types (`opaque!`).

/// Implements CEL's value traits for the Rust type `$t` of a Kubernetes library value
/// (`net.IP`, `kubernetes.URL`, ...): opaque, of the CEL type `$ty`, equal to another of its
/// type by `$eq` (Rust's `==` when not given).
macro_rules! opaque {
    ($t:ty, $ty:ident) => {
        opaque!($t, $ty, |a: &$t, b: &$t| a == b);
    };
    ($t:ty, $ty:ident, $eq:expr) => {
        impl cel::common::value::Val for $t {
            fn get_type(&self) -> &cel::common::types::Type {
                <Self as cel::common::value::Val>::cel_type()
            }

            fn cel_type() -> &'static cel::common::types::Type {
                &$ty
            }

            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other.downcast_ref::<$t>().is_some_and(|o| ($eq)(self, o))
            }

            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v> {
                Box::new(self.clone())
            }

            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }

        impl cel::common::value::StaticVal for $t {}
    };
}
