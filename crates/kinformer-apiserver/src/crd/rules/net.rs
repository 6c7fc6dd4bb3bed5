//! Kubernetes' IP and CIDR libraries for CEL (`k8s.io/apiserver/pkg/cel/library/ip.go`,
//! `cidr.go`), as CRD rules call them: `isIP(s)`, `ip(s)`, `ip.isCanonical(s)`, and on an
//! address `family()`, `isUnspecified()`, `isLoopback()`, `isLinkLocalMulticast()`,
//! `isLinkLocalUnicast()`, `isGlobalUnicast()`; `isCIDR(s)`, `cidr(s)`, and on a CIDR
//! `containsIP(ip|string)`, `containsCIDR(cidr|string)`, `ip()`, `masked()`,
//! `prefixLength()`; `string(...)` of both and `==` by value.
//!
//! Addresses are parsed as Go's `netip` parses them (no leading zeros in IPv4 fields, no
//! zones), and IPv4-mapped IPv6 addresses are refused, as Kubernetes refuses them. A parse
//! error's words are Kubernetes' own prefix with a shorter reason than Go's parser gives.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::{CelBool, CelInt, CelString, Type};

use cel::{DeclarationError, Env, ExecutionError};

static IP: Type = Type::new_unspecified_type("net.IP");
static CIDR: Type = Type::new_unspecified_type("net.CIDR");

/// An IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ip(IpAddr);

/// A CIDR: an address (not necessarily masked) and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

fn parse_addr(raw: &str) -> Result<IpAddr, String> {
    let addr: IpAddr = raw.parse().map_err(|_| {
        format!(
            "IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): unable to parse IP"
        )
    })?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let bad = || {
        format!(
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix({raw:?}): invalid prefix"
        )
    };
    let (addr, bits) = raw.split_once('/').ok_or_else(bad)?;
    let addr: IpAddr = addr.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let valid_bits = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && (bits == "0" || !bits.starts_with('0'));
    let bits: u8 = bits
        .parse()
        .ok()
        .filter(|b| valid_bits && *b <= max)
        .ok_or_else(bad)?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(Cidr { addr, bits })
}

fn masked_addr(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
        }
    }
}

impl Cidr {
    fn masked(self) -> Cidr {
        Cidr {
            addr: masked_addr(self.addr, self.bits),
            bits: self.bits,
        }
    }

    /// Whether `ip` is in this network (of the same family).
    fn contains(self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4()
            && masked_addr(ip, self.bits) == masked_addr(self.addr, self.bits)
    }
}

opaque!(Ip, IP);
opaque!(Cidr, CIDR);

fn ip(s: &CelString<'_>) -> Result<Ip, ExecutionError> {
    parse_addr(s.inner())
        .map(Ip)
        .map_err(|e| ExecutionError::function_error("ip", e))
}

fn is_ip(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse_addr(s.inner()).is_ok())
}

fn ip_is_canonical(s: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let addr =
        parse_addr(s.inner()).map_err(|e| ExecutionError::function_error("ip.isCanonical", e))?;
    Ok(CelBool::from(addr.to_string() == s.inner()))
}

fn ip_string(ip: &Ip) -> CelString<'static> {
    CelString::from(ip.0.to_string())
}

fn family(ip: &Ip) -> CelInt {
    CelInt::from(if ip.0.is_ipv4() { 4 } else { 6 })
}

fn is_unspecified(ip: &Ip) -> CelBool {
    CelBool::from(ip.0.is_unspecified())
}

fn is_loopback(ip: &Ip) -> CelBool {
    CelBool::from(ip.0.is_loopback())
}

/// Go's `IsLinkLocalMulticast`: 224.0.0.0/24, or ff02::/16 with any flags.
fn link_local_multicast(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
        IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
    }
}

/// Go's `IsLinkLocalUnicast`: 169.254.0.0/16, or fe80::/10.
fn link_local_unicast(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[..2] == [169, 254],
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast(ip: &Ip) -> CelBool {
    CelBool::from(link_local_multicast(ip.0))
}

fn is_link_local_unicast(ip: &Ip) -> CelBool {
    CelBool::from(link_local_unicast(ip.0))
}

/// Go's `IsGlobalUnicast`: neither unspecified, nor the IPv4 broadcast address, nor loopback,
/// multicast or link-local unicast (private and unique-local addresses are global unicast).
fn is_global_unicast(ip: &Ip) -> CelBool {
    let a = ip.0;
    let broadcast = a == IpAddr::V4(Ipv4Addr::BROADCAST);
    CelBool::from(
        !(a.is_unspecified()
            || broadcast
            || a.is_loopback()
            || a.is_multicast()
            || link_local_unicast(a)),
    )
}

fn cidr(s: &CelString<'_>) -> Result<Cidr, ExecutionError> {
    parse_cidr(s.inner()).map_err(|e| ExecutionError::function_error("cidr", e))
}

fn is_cidr(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse_cidr(s.inner()).is_ok())
}

fn cidr_string(c: &Cidr) -> CelString<'static> {
    CelString::from(format!("{}/{}", c.addr, c.bits))
}

fn contains_ip(c: &Cidr, other: &Ip) -> CelBool {
    CelBool::from(c.contains(other.0))
}

fn contains_ip_string(c: &Cidr, other: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let other = ip(other)?;
    Ok(contains_ip(c, &other))
}

/// Whether `other` lies within this network: the same network at this prefix length, and a
/// prefix at least as long.
fn contains_cidr(c: &Cidr, other: &Cidr) -> CelBool {
    CelBool::from(c.contains(other.addr) && c.bits <= other.bits)
}

fn contains_cidr_string(c: &Cidr, other: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let other = cidr(other)?;
    Ok(contains_cidr(c, &other))
}

fn cidr_ip(c: &Cidr) -> Ip {
    Ip(c.addr)
}

fn masked(c: &Cidr) -> Cidr {
    c.masked()
}

fn prefix_length(c: &Cidr) -> CelInt {
    CelInt::from(i64::from(c.bits))
}

/// Registers both libraries on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(IP.to_owned())?;
    env.add_type(CIDR.to_owned())?;
    cel::add_overload!(env, fn ip: (CelString) -> Result<Ip>)?;
    cel::add_overload!(env, fn is_ip: (CelString) -> CelBool, name = "isIP")?;
    cel::add_overload!(env, fn ip_is_canonical: (CelString) -> Result<CelBool>, name = "ip.isCanonical")?;
    cel::add_overload!(env, fn ip_string: (Ip) -> CelString, name = "string")?;
    cel::add_member_overload!(env, fn family: (Ip) -> CelInt)?;
    cel::add_member_overload!(env, fn is_unspecified: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_loopback: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_multicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_unicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_global_unicast: (Ip) -> CelBool)?;
    cel::add_overload!(env, fn cidr: (CelString) -> Result<Cidr>)?;
    cel::add_overload!(env, fn is_cidr: (CelString) -> CelBool, name = "isCIDR")?;
    cel::add_overload!(env, fn cidr_string: (Cidr) -> CelString, name = "string")?;
    cel::add_member_overload!(env, fn contains_ip: (Cidr, Ip) -> CelBool, name = "containsIP")?;
    cel::add_member_overload!(env, fn contains_ip_string: (Cidr, CelString) -> Result<CelBool>, name = "containsIP")?;
    cel::add_member_overload!(env, fn contains_cidr: (Cidr, Cidr) -> CelBool, name = "containsCIDR")?;
    cel::add_member_overload!(env, fn contains_cidr_string: (Cidr, CelString) -> Result<CelBool>, name = "containsCIDR")?;
    cel::add_member_overload!(env, fn cidr_ip: (Cidr) -> Ip, name = "ip")?;
    cel::add_member_overload!(env, fn masked: (Cidr) -> Cidr)?;
    cel::add_member_overload!(env, fn prefix_length: (Cidr) -> CelInt)?;
    Ok(())
}
