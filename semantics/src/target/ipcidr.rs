//! `-S`/`S@` targets (`salt/matchers/ipcidr_match.py`): an address or network
//! checked against the minion's `ipv4`/`ipv6` grains.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use serde_json::Value;

/// Why an `S@` word or `-S` target is not an address or network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IpTargetError {
    /// Neither an address nor `address/prefix` (nor `address/netmask`).
    #[error("invalid ip address or network \"{0}\"")]
    Syntax(String),
    /// A network with bits set after the prefix, which Python's `ip_network` refuses.
    #[error("invalid network \"{0}\": host bits are set")]
    HostBits(String),
}

/// A parsed `ipcidr` target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpTarget {
    /// A bare address: the minion must have exactly this address.
    Addr(IpAddr),
    /// A network: the minion must have an address inside it.
    Net(IpNet),
}

impl IpTarget {
    /// Parses as Python's `ip_address`, then strict `ip_network` (IPv4
    /// networks may use a netmask or hostmask instead of a prefix length).
    pub fn parse(s: &str) -> Result<IpTarget, IpTargetError> {
        if let Ok(addr) = s.parse::<IpAddr>() {
            return Ok(IpTarget::Addr(addr));
        }
        let net = parse_network(s).ok_or_else(|| IpTargetError::Syntax(s.to_owned()))?;
        if net.addr() != net.network() {
            return Err(IpTargetError::HostBits(s.to_owned()));
        }
        Ok(IpTarget::Net(net))
    }

    /// Whether the grains' `ipv4`/`ipv6` list (the one of this target's
    /// family) holds a matching address. Entries that are not addresses are skipped.
    pub fn matches(&self, grains: &Value) -> bool {
        let key = if self.is_ipv6() { "ipv6" } else { "ipv4" };
        let entries: &[Value] = match grains.get(key) {
            Some(Value::Array(items)) => items,
            Some(single @ Value::String(_)) => std::slice::from_ref(single),
            _ => return false,
        };
        entries
            .iter()
            .filter_map(|v| v.as_str()?.parse::<IpAddr>().ok())
            .any(|ip| self.contains(ip))
    }

    /// Whether this is an IPv6 address or network.
    fn is_ipv6(&self) -> bool {
        match self {
            IpTarget::Addr(a) => a.is_ipv6(),
            IpTarget::Net(n) => matches!(n, IpNet::V6(_)),
        }
    }

    /// The address itself, or any address inside the network.
    fn contains(&self, ip: IpAddr) -> bool {
        match self {
            IpTarget::Addr(a) => *a == ip,
            IpTarget::Net(n) => n.contains(&ip),
        }
    }
}

/// `address/prefix`, or for IPv4 `address/netmask` and `address/hostmask`.
fn parse_network(s: &str) -> Option<IpNet> {
    let (addr, mask) = s.split_once('/')?;
    if mask.bytes().all(|b| b.is_ascii_digit()) && !mask.is_empty() {
        let prefix: u8 = mask.parse().ok()?;
        return IpNet::new(addr.parse().ok()?, prefix).ok();
    }
    let addr: Ipv4Addr = addr.parse().ok()?;
    let mask = u32::from(mask.parse::<Ipv4Addr>().ok()?);
    let prefix = mask_prefix(mask).or_else(|| mask_prefix(!mask))?;
    IpNet::new(IpAddr::V4(addr), prefix).ok()
}

/// The prefix length of a contiguous netmask (ones then zeros).
fn mask_prefix(mask: u32) -> Option<u8> {
    let ones = mask.leading_ones();
    (mask.checked_shl(ones).unwrap_or(0) == 0).then(|| u8::try_from(ones).ok())?
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_cases() {
        let ok = [
            "10.0.0.1",
            "10.0.0.0/8",
            "10.0.0.0/255.0.0.0",
            "10.0.0.0/0.255.255.255",
            "::1",
            "fe80::/10",
            "0.0.0.0/0",
        ];
        for s in ok {
            assert!(IpTarget::parse(s).is_ok(), "{s}");
        }
        let bad = [
            (
                "10.0.0.1/8",
                "invalid network \"10.0.0.1/8\": host bits are set",
            ),
            (
                "10.0.0.0/33",
                "invalid ip address or network \"10.0.0.0/33\"",
            ),
            ("10.0.0", "invalid ip address or network \"10.0.0\""),
            ("web1", "invalid ip address or network \"web1\""),
            (
                "10.0.0.0/255.0.255.0",
                "invalid ip address or network \"10.0.0.0/255.0.255.0\"",
            ),
        ];
        for (s, msg) in bad {
            let err = IpTarget::parse(s).map(|_| ()).err().map(|e| e.to_string());
            assert_eq!(err.as_deref(), Some(msg), "{s}");
        }
    }

    #[test]
    fn match_cases() {
        let grains = json!({"ipv4": ["127.0.0.1", "10.1.2.3"], "ipv6": ["::1", "fe80::1"]});
        let cases = [
            ("10.1.2.3", true),
            ("10.1.2.4", false),
            ("10.0.0.0/8", true),
            ("192.168.0.0/16", false),
            ("fe80::/10", true),
            ("::1", true),
            ("2001:db8::/32", false),
        ];
        for (tgt, want) in cases {
            let got = IpTarget::parse(tgt).is_ok_and(|t| t.matches(&grains));
            assert_eq!(got, want, "{tgt}");
        }
        let no_v6 = json!({"ipv4": ["10.1.2.3"]});
        assert!(!IpTarget::parse("::1").is_ok_and(|t| t.matches(&no_v6)));
    }
}
