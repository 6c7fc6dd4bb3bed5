//! Kubernetes' quantity library for CEL (`k8s.io/apiserver/pkg/cel/library/quantity.go`), which
//! CRD rules use to compare resource amounts: `quantity('1.5Gi')`, `isQuantity(s)`, and on a
//! quantity `isInteger()`, `asInteger()`, `asApproximateFloat()`, `add(q|int)`,
//! `sub(q|int)`, `isLessThan(q)`, `isGreaterThan(q)`, `compareTo(q)`, and `==` by value
//! (`quantity('1Gi') == quantity('1024Mi')`).
//!
//! A quantity is held exactly, as a fraction of 128-bit integers, which covers what
//! resource amounts are written as (`100m`, `1.5Gi`, `2e3`, `1Ei`); a larger one, and a
//! comparison whose cross products overflow, falls back to floating point. Beside it, the
//! form kube-apiserver's `Quantity` keeps it in decides `isInteger()` and `asInteger()` as
//! there: an int64 with a power-of-ten scale when parsing finds one safe (`2000m` is 2000 at
//! scale -3, which `asInteger()` refuses; `1Ei` is not kept so at all), else an arbitrary
//! decimal, which `asInteger()` always refuses.

use std::any::Any;
use std::cmp::Ordering;

use cel::common::types::{CelBool, CelDouble, CelInt, CelString, Type};
use cel::common::value::{StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

/// The CEL type of a quantity.
static QUANTITY: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// kube-apiserver's words for a string that is not a quantity.
const FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// A quantity: `num / den`, `den > 0`, in lowest terms (or `approx` when too large for that),
/// and kube-apiserver's int64 form of it (`value × 10^scale`) when it has one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Quantity {
    num: i128,
    den: i128,
    approx: Option<f64>,
    fast: Option<(i64, i32)>,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

impl Quantity {
    fn new(num: i128, den: i128) -> Option<Quantity> {
        if den == 0 {
            return None;
        }
        let (num, den) = if den < 0 {
            (num.checked_neg()?, den.checked_neg()?)
        } else {
            (num, den)
        };
        let g = gcd(num, den);
        Some(Quantity {
            num: num / g,
            den: den / g,
            approx: None,
            fast: None,
        })
    }

    fn with_fast(mut self, fast: Option<(i64, i32)>) -> Quantity {
        self.fast = fast;
        self
    }

    /// kube-apiserver's int64 form of a parsed number (`ParseQuantity`'s fast path): the
    /// digits as one int64, at the suffix's power of ten less the fraction's digits, when the
    /// digits leave room (18 in all; fewer for binary suffixes, which take none after a point).
    fn fast_form(
        whole: &str,
        fraction: &str,
        binary: Option<u32>,
        exp10: i64,
        negative: bool,
    ) -> Option<(i64, i32)> {
        let digits = whole.len() + fraction.len();
        let (mantissa, scale) = match binary {
            Some(power) => {
                let room = 15 - whole.len() as i64 - (i64::from(power) * 3 / 10) - 1;
                if !fraction.is_empty() || room < 0 {
                    return None;
                }
                (1i64.checked_shl(power)?, 0i64)
            }
            None => {
                if 18 - (digits as i64) < 0 {
                    return None;
                }
                (1, exp10)
            }
        };
        let scale = scale - fraction.len() as i64;
        if scale < -9 {
            return None;
        }
        let value: i64 = format!("{whole}{fraction}").parse().ok()?;
        let value = value.checked_mul(mantissa)?;
        Some((
            if negative { -value } else { value },
            i32::try_from(scale).ok()?,
        ))
    }

    /// Parses a quantity as kube-apiserver's `resource.ParseQuantity` does: a signed decimal
    /// number, then a binary suffix (`Ki` … `Ei`), a decimal one (`n`, `u`, `m`, `k`, `M`, `G`,
    /// `T`, `P`, `E`) or an exponent (`e3`, `E-2`).
    pub(super) fn parse(s: &str) -> Result<Quantity, String> {
        let format = || FORMAT.to_string();
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(format());
        }
        let too_large = || "quantity is too large".to_string();
        // The digits and the fraction's denominator, when 128 bits hold them.
        let num = whole
            .bytes()
            .chain(fraction.bytes())
            .try_fold(0i128, |n, d| {
                n.checked_mul(10)?.checked_add(i128::from(d - b'0'))
            });
        let den = u32::try_from(fraction.len())
            .ok()
            .and_then(|f| 10i128.checked_pow(f));
        let (base, power): (i128, i64) = match suffix {
            "" => (10, 0),
            "n" => (10, -9),
            "u" => (10, -6),
            "m" => (10, -3),
            "k" => (10, 3),
            "M" => (10, 6),
            "G" => (10, 9),
            "T" => (10, 12),
            "P" => (10, 15),
            "E" => (10, 18),
            "Ki" => (2, 10),
            "Mi" => (2, 20),
            "Gi" => (2, 30),
            "Ti" => (2, 40),
            "Pi" => (2, 50),
            "Ei" => (2, 60),
            exponent if exponent.starts_with(['e', 'E']) => {
                let digits = &exponent[1..];
                let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
                if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(format());
                }
                (10, digits.parse::<i64>().map_err(|_| too_large())?)
            }
            _ if suffix
                .bytes()
                .all(|b| b"eEinumkKMGTP+-0123456789".contains(&b)) =>
            {
                return Err("unable to parse quantity's suffix".into());
            }
            _ => return Err(format()),
        };
        let binary = (base == 2).then_some(power as u32);
        let fast = Quantity::fast_form(
            whole,
            fraction,
            binary,
            if base == 10 { power } else { 0 },
            negative,
        );
        let exact = u32::try_from(power.unsigned_abs())
            .ok()
            .and_then(|p| base.checked_pow(p))
            .zip(num.zip(den))
            .and_then(|(scale, (num, den))| {
                if power >= 0 {
                    num.checked_mul(scale).map(|n| (n, den))
                } else {
                    den.checked_mul(scale).map(|d| (num, d))
                }
            })
            .and_then(|(n, d)| Quantity::new(if negative { -n } else { n }, d));
        match exact {
            Some(q) => Ok(q.with_fast(fast)),
            None => {
                let value = format!("{}{whole}.{fraction}0", if negative { "-" } else { "" })
                    .parse::<f64>()
                    .map_err(|_| format())?
                    * (base as f64).powf(power as f64);
                Ok(Quantity {
                    num: 0,
                    den: 1,
                    approx: Some(value),
                    fast: None,
                })
            }
        }
    }

    fn cmp(&self, other: &Quantity) -> Ordering {
        let exact = self.approx.is_none() && other.approx.is_none();
        match (
            self.num.checked_mul(other.den).filter(|_| exact),
            other.num.checked_mul(self.den).filter(|_| exact),
        ) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self
                .float()
                .partial_cmp(&other.float())
                .unwrap_or(Ordering::Equal),
        }
    }

    fn float(&self) -> f64 {
        self.approx
            .unwrap_or_else(|| self.num as f64 / self.den as f64)
    }

    fn plus(&self, other: &Quantity, sign: i128) -> Quantity {
        let exact = (|| {
            if self.approx.is_some() || other.approx.is_some() {
                return None;
            }
            let a = self.num.checked_mul(other.den)?;
            let b = other.num.checked_mul(self.den)?.checked_mul(sign)?;
            Quantity::new(a.checked_add(b)?, self.den.checked_mul(other.den)?)
        })();
        // kube-apiserver's int64Amount.Add: at the smaller scale, while it fits.
        let fast = (|| {
            let ((a, sa), (b, sb)) = (self.fast?, other.fast?);
            let b = if sign < 0 { b.checked_neg()? } else { b };
            if b == 0 {
                return Some((a, sa));
            }
            if a == 0 {
                return Some((b, sb));
            }
            let up = |v: i64, by: i32| v.checked_mul(10i64.checked_pow(u32::try_from(by).ok()?)?);
            let scale = sa.min(sb);
            Some((up(a, sa - scale)?.checked_add(up(b, sb - scale)?)?, scale))
        })();
        match exact {
            Some(q) => q.with_fast(fast),
            None => Quantity {
                num: 0,
                den: 1,
                approx: Some(self.float() + sign as f64 * other.float()),
                fast: None,
            },
        }
    }

    /// `asInteger()`: kube-apiserver's `AsInt64`, which only its int64 form at a scale of zero
    /// or more gives.
    fn integer(&self) -> Option<i64> {
        let (value, scale) = self.fast?;
        if scale < 0 {
            return None;
        }
        value.checked_mul(10i64.checked_pow(u32::try_from(scale).ok()?)?)
    }
}

impl Val for Quantity {
    fn get_type(&self) -> &Type {
        <Self as Val>::cel_type()
    }

    fn cel_type() -> &'static Type {
        &QUANTITY
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Quantity>()
            .is_some_and(|o| self.cmp(o) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for Quantity {}

fn quantity(s: &CelString<'_>) -> Result<Quantity, ExecutionError> {
    Quantity::parse(s.inner()).map_err(|e| ExecutionError::function_error("quantity", e))
}

fn is_quantity(s: &CelString<'_>) -> CelBool {
    CelBool::from(Quantity::parse(s.inner()).is_ok())
}

fn is_integer(q: &Quantity) -> CelBool {
    CelBool::from(q.integer().is_some())
}

fn as_integer(q: &Quantity) -> Result<CelInt, ExecutionError> {
    q.integer().map(CelInt::from).ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })
}

fn as_approximate_float(q: &Quantity) -> CelDouble {
    CelDouble::from(q.float())
}

/// An int as a quantity (`resource.NewQuantity(i, DecimalSI)`).
fn of_int(i: &CelInt) -> Quantity {
    let i = *i.inner();
    Quantity {
        num: i128::from(i),
        den: 1,
        approx: None,
        fast: Some((i, 0)),
    }
}

fn add(q: &Quantity, o: &Quantity) -> Quantity {
    q.plus(o, 1)
}

fn add_int(q: &Quantity, i: &CelInt) -> Quantity {
    q.plus(&of_int(i), 1)
}

fn sub(q: &Quantity, o: &Quantity) -> Quantity {
    q.plus(o, -1)
}

fn sub_int(q: &Quantity, i: &CelInt) -> Quantity {
    q.plus(&of_int(i), -1)
}

fn is_less_than(q: &Quantity, o: &Quantity) -> CelBool {
    CelBool::from(q.cmp(o) == Ordering::Less)
}

fn is_greater_than(q: &Quantity, o: &Quantity) -> CelBool {
    CelBool::from(q.cmp(o) == Ordering::Greater)
}

fn compare_to(q: &Quantity, o: &Quantity) -> CelInt {
    CelInt::from(q.cmp(o) as i64)
}

/// Registers the library on `env`, as Kubernetes 1.36 has it (without `sign()`, which came
/// later).
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(QUANTITY.to_owned())?;
    cel::add_overload!(env, fn quantity: (CelString) -> Result<Quantity>)?;
    cel::add_overload!(env, fn is_quantity: (CelString) -> CelBool)?;
    cel::add_member_overload!(env, fn is_integer: (Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn as_integer: (Quantity) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn as_approximate_float: (Quantity) -> CelDouble)?;
    cel::add_member_overload!(env, fn add: (Quantity, Quantity) -> Quantity)?;
    cel::add_member_overload!(env, fn add_int: (Quantity, CelInt) -> Quantity, name = "add")?;
    cel::add_member_overload!(env, fn sub: (Quantity, Quantity) -> Quantity)?;
    cel::add_member_overload!(env, fn sub_int: (Quantity, CelInt) -> Quantity, name = "sub")?;
    cel::add_member_overload!(env, fn is_less_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn is_greater_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn compare_to: (Quantity, Quantity) -> CelInt)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn quantities_parse_and_compare_as_kubernetes_does() {
        assert_eq!(q("1Gi").cmp(&q("1024Mi")), std::cmp::Ordering::Equal);
        assert_eq!(q("1.5Gi").cmp(&q("1536Mi")), std::cmp::Ordering::Equal);
        assert_eq!(q("100m").cmp(&q("0.1")), std::cmp::Ordering::Equal);
        assert_eq!(q("1e3").cmp(&q("1k")), std::cmp::Ordering::Equal);
        assert_eq!(q("2E-3").cmp(&q("2m")), std::cmp::Ordering::Equal);
        assert_eq!(q("-1").cmp(&q("+1")), std::cmp::Ordering::Less);
        assert_eq!(q(".5").cmp(&q("500m")), std::cmp::Ordering::Equal);
        assert_eq!(q("1.").cmp(&q("1")), std::cmp::Ordering::Equal);
        assert_eq!(q("1Ei").cmp(&q("1E")), std::cmp::Ordering::Greater);
        assert_eq!(q("500Mi").integer(), Some(524_288_000));
        assert_eq!(q("1500m").integer(), None);
        // as kube-apiserver keeps them: 2000m at scale -3, 1Ei and 1e40 not as int64
        assert_eq!(q("2000m").integer(), None);
        assert_eq!(q("2Ei").integer(), None);
        assert_eq!(q("1e40").integer(), None);
        assert_eq!(q("1e40").cmp(&q("1Ei")), std::cmp::Ordering::Greater);
        assert_eq!(q("3").plus(&q("1"), 1).integer(), Some(4));
        assert_eq!(q("3k").plus(&q("1"), -1).integer(), Some(2999));
        for bad in [
            "", "Gi", ".", "1.2.3", "1 Gi", "1g", "1e", "1e+", "1Kii", "--1",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?}");
        }
    }
}
