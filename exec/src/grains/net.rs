//! The network grains: addresses per interface (`getifaddrs`), default gateways
//! (`/proc/net/route`, `/proc/net/ipv6_route`), the resolver's configuration
//! (`/etc/resolv.conf`), and `fqdns` / `fqdn_ip4` / `fqdn_ip6`. Parsing is pure and tested
//! with data; [`interfaces`] and the `read_*` helpers touch the system.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};

use nix::ifaddrs::getifaddrs;
use serde_json::{Map, Value, json};

/// One interface's addresses, as read from `getifaddrs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Interface {
    /// The interface name (`eth0`).
    pub name: String,
    /// Its hardware address, `aa:bb:...`, when it has one.
    pub hwaddr: Option<String>,
    /// IPv4 addresses with their netmasks and broadcast addresses.
    pub inet: Vec<(Ipv4Addr, Option<Ipv4Addr>, Option<Ipv4Addr>)>,
    /// IPv6 addresses with their prefix lengths.
    pub inet6: Vec<(Ipv6Addr, u8)>,
    /// Whether the interface is up.
    pub up: bool,
}

/// Every interface with its addresses, in the order the kernel lists them.
pub(crate) fn interfaces() -> Vec<Interface> {
    let mut out: Vec<Interface> = Vec::new();
    let Ok(addrs) = getifaddrs() else {
        return out;
    };
    for ifa in addrs {
        let pos = match out.iter().position(|i| i.name == ifa.interface_name) {
            Some(pos) => pos,
            None => {
                out.push(Interface {
                    name: ifa.interface_name.clone(),
                    ..Interface::default()
                });
                out.len() - 1
            }
        };
        let iface = &mut out[pos];
        iface.up |= ifa.flags.contains(nix::net::if_::InterfaceFlags::IFF_UP);
        let Some(addr) = ifa.address else { continue };
        if let Some(sin) = addr.as_sockaddr_in() {
            let mask = ifa.netmask.and_then(|m| m.as_sockaddr_in().map(|s| s.ip()));
            let bcast = ifa
                .broadcast
                .and_then(|b| b.as_sockaddr_in().map(|s| s.ip()));
            iface.inet.push((sin.ip(), mask, bcast));
        } else if let Some(sin6) = addr.as_sockaddr_in6() {
            let prefix = ifa
                .netmask
                .and_then(|m| m.as_sockaddr_in6().map(|s| s.ip()))
                .map_or(128, |m| {
                    u8::try_from(u128::from(m).count_ones()).unwrap_or(128)
                });
            iface.inet6.push((sin6.ip(), prefix));
        } else if let Some(mac) = addr.as_link_addr().and_then(|l| l.addr()) {
            let text: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
            iface.hwaddr = Some(text.join(":"));
        }
    }
    out
}

/// `ipv4`, `ipv6` (all addresses, loopback included, sorted and unique, as Salt's),
/// `ip4_interfaces`, `ip6_interfaces`, `ip_interfaces` and `hwaddr_interfaces`.
pub(crate) fn address_grains(ifaces: &[Interface]) -> Map<String, Value> {
    let mut v4 = Map::new();
    let mut v6 = Map::new();
    let mut both = Map::new();
    let mut hw = Map::new();
    let mut all4 = BTreeSet::new();
    let mut all6 = BTreeSet::new();
    for iface in ifaces {
        let a4: Vec<String> = unique(iface.inet.iter().map(|(a, _, _)| a.to_string()));
        let a6: Vec<String> = unique(iface.inet6.iter().map(|(a, _)| a.to_string()));
        all4.extend(iface.inet.iter().map(|(a, _, _)| *a));
        all6.extend(iface.inet6.iter().map(|(a, _)| *a));
        both.insert(iface.name.clone(), json!([a4.clone(), a6.clone()].concat()));
        v4.insert(iface.name.clone(), json!(a4));
        v6.insert(iface.name.clone(), json!(a6));
        if let Some(mac) = &iface.hwaddr {
            hw.insert(iface.name.clone(), json!(mac));
        }
    }
    let mut g = Map::new();
    g.insert("hwaddr_interfaces".into(), Value::Object(hw));
    g.insert("ip4_interfaces".into(), Value::Object(v4));
    g.insert("ip6_interfaces".into(), Value::Object(v6));
    g.insert("ip_interfaces".into(), Value::Object(both));
    g.insert(
        "ipv4".into(),
        json!(all4.iter().map(ToString::to_string).collect::<Vec<_>>()),
    );
    g.insert(
        "ipv6".into(),
        json!(all6.iter().map(ToString::to_string).collect::<Vec<_>>()),
    );
    g
}

fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// One route of the kernel's routing table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    /// The destination network.
    pub destination: IpAddr,
    /// Its prefix length.
    pub prefix: u8,
    /// The gateway (the unspecified address for a directly connected network).
    pub gateway: IpAddr,
    /// The interface.
    pub iface: String,
    /// The kernel's route flags (`RTF_UP` = 1, `RTF_GATEWAY` = 2, `RTF_HOST` = 4, ...).
    pub flags: u32,
}

impl Route {
    /// A usable default route (`0.0.0.0/0` or `::/0`, up, not a reject route).
    pub(crate) fn is_default(&self) -> bool {
        const RTF_UP: u32 = 0x1;
        const RTF_REJECT: u32 = 0x200;
        self.prefix == 0 && self.flags & RTF_UP != 0 && self.flags & RTF_REJECT == 0
    }
}

/// Routes from `/proc/net/route` (hex fields, addresses little-endian).
pub(crate) fn parse_route4(text: &str) -> Vec<Route> {
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (dest, gw, flags, mask) = (
                hex(f.get(1)?)?,
                hex(f.get(2)?)?,
                hex(f.get(3)?)?,
                hex(f.get(7)?)?,
            );
            Some(Route {
                destination: IpAddr::V4(Ipv4Addr::from(dest.swap_bytes())),
                prefix: u8::try_from(mask.count_ones()).unwrap_or(32),
                gateway: IpAddr::V4(Ipv4Addr::from(gw.swap_bytes())),
                iface: (*f.first()?).to_owned(),
                flags,
            })
        })
        .collect()
}

/// Routes from `/proc/net/ipv6_route` (hex fields, addresses in network order).
pub(crate) fn parse_route6(text: &str) -> Vec<Route> {
    let addr = |s: &str| u128::from_str_radix(s, 16).ok().map(Ipv6Addr::from);
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(Route {
                destination: IpAddr::V6(addr(f.first()?)?),
                prefix: u8::from_str_radix(f.get(1)?, 16).ok()?,
                gateway: IpAddr::V6(addr(f.get(4)?)?),
                iface: (*f.get(9)?).to_owned(),
                flags: u32::from_str_radix(f.get(8)?, 16).ok()?,
            })
        })
        .collect()
}

/// The routing tables of both families, read now.
pub(crate) fn read_routes() -> (Vec<Route>, Vec<Route>) {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    (
        parse_route4(&read("/proc/net/route")),
        parse_route6(&read("/proc/net/ipv6_route")),
    )
}

/// `ip4_gw`, `ip6_gw` (the default gateway's address, `true` for a default route without
/// one, else `false`) and `ip_gw`, as Salt's `default_gateway` grain.
pub(crate) fn gateway_grains(v4: &[Route], v6: &[Route]) -> Map<String, Value> {
    let gw = |routes: &[Route]| match routes.iter().find(|r| r.is_default()) {
        Some(r) if !r.gateway.is_unspecified() => json!(r.gateway.to_string()),
        Some(_) => json!(true),
        None => json!(false),
    };
    let (g4, g6) = (gw(v4), gw(v6));
    let mut g = Map::new();
    g.insert(
        "ip_gw".into(),
        json!(g4 != json!(false) || g6 != json!(false)),
    );
    g.insert("ip4_gw".into(), g4);
    g.insert("ip6_gw".into(), g6);
    g
}

/// Salt's `parse_resolv`: `{nameservers, ip4_nameservers, ip6_nameservers, sortlist, domain,
/// search, options}`.
pub(crate) fn parse_resolv(text: &str) -> Value {
    let mut ns: Vec<String> = Vec::new();
    let mut ns4: Vec<String> = Vec::new();
    let mut ns6: Vec<String> = Vec::new();
    let (mut search, mut sortlist, mut options) = (Vec::new(), Vec::new(), Vec::<String>::new());
    let mut domain = String::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((directive, rest)) = words.split_first() else {
            continue;
        };
        let args: Vec<&str> = rest
            .iter()
            .take_while(|w| !w.starts_with(['#', ';']))
            .copied()
            .collect();
        let Some(first) = args.first() else { continue };
        match directive.to_ascii_lowercase().as_str() {
            "nameserver" => {
                if let Ok(ip) = first.parse::<IpAddr>() {
                    let text = ip.to_string();
                    let family = if ip.is_ipv4() { &mut ns4 } else { &mut ns6 };
                    for list in [&mut ns, family] {
                        if !list.contains(&text) {
                            list.push(text.clone());
                        }
                    }
                }
            }
            "domain" => domain = (*first).to_owned(),
            "search" => search = args.iter().map(|s| (*s).to_owned()).collect(),
            "sortlist" => sortlist.extend(args.iter().filter_map(|s| sortlist_entry(s))),
            "options" if !options.iter().any(|o| o == first) => options.push((*first).to_owned()),
            _ => {}
        }
    }
    json!({
        "nameservers": ns, "ip4_nameservers": ns4, "ip6_nameservers": ns6,
        "sortlist": sortlist, "domain": domain, "search": search, "options": options,
    })
}

/// A sortlist entry as `address/netmask`, the natural (classful) mask when none is given.
fn sortlist_entry(raw: &str) -> Option<String> {
    let (addr, mask) = match raw.split_once('/') {
        Some((a, m)) => (a.parse::<Ipv4Addr>().ok()?, m.parse::<Ipv4Addr>().ok()?),
        None => {
            let a = raw.parse::<Ipv4Addr>().ok()?;
            let mask = match a.octets()[0] {
                0..=127 => Ipv4Addr::new(255, 0, 0, 0),
                128..=191 => Ipv4Addr::new(255, 255, 0, 0),
                _ => Ipv4Addr::new(255, 255, 255, 0),
            };
            (a, mask)
        }
    };
    let network = Ipv4Addr::from(u32::from(addr) & u32::from(mask));
    Some(format!("{network}/{mask}"))
}

/// The `dns` grain, from systemd-resolved's file when present, as Salt reads it.
pub(crate) fn read_dns() -> Option<Value> {
    ["/run/systemd/resolve/resolv.conf", "/etc/resolv.conf"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|text| parse_resolv(&text))
}

/// `fqdns`: the dotted names `/etc/hosts` gives the minion's non-loopback addresses, sorted.
/// (Salt asks the resolver for each address's reverse name; saltq reads the hosts file only,
/// so that computing grains never waits on DNS.)
pub(crate) fn fqdns_from_hosts(hosts: &str, addrs: &[IpAddr]) -> Vec<String> {
    let mut names = BTreeSet::new();
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) else {
            continue;
        };
        if ip.is_loopback() || !addrs.contains(&ip) {
            continue;
        }
        names.extend(words.filter(|w| w.contains('.')).map(str::to_owned));
    }
    names.into_iter().collect()
}

/// `fqdn_ip4` and `fqdn_ip6`: the addresses the resolver gives the minion's fqdn.
pub(crate) fn fqdn_ips(fqdn: &str) -> Map<String, Value> {
    let addrs: Vec<IpAddr> = (fqdn, 0)
        .to_socket_addrs()
        .map(|it| it.map(|a| a.ip()).collect())
        .unwrap_or_default();
    let of = |v6: bool| {
        let set: BTreeSet<String> = addrs
            .iter()
            .filter(|a| a.is_ipv6() == v6)
            .map(ToString::to_string)
            .collect();
        json!(set.into_iter().collect::<Vec<_>>())
    };
    let mut g = Map::new();
    g.insert("fqdn_ip4".into(), of(false));
    g.insert("fqdn_ip6".into(), of(true));
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_gateways() {
        let v4 = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                  eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                  eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        let routes = parse_route4(v4);
        assert_eq!(routes.len(), 2);
        assert_eq!(
            routes[0].gateway,
            "192.0.2.1"
                .parse::<IpAddr>()
                .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
        );
        assert_eq!(routes[1].destination.to_string(), "192.0.2.0");
        assert_eq!(routes[1].prefix, 24);
        let v6 = "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n\
                  00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";
        let routes6 = parse_route6(v6);
        assert_eq!(routes6.len(), 2);
        assert!(routes6[0].is_default() && !routes6[1].is_default());
        // What salt 3007.8 reported on this machine's routes.
        assert_eq!(
            Value::Object(gateway_grains(&routes, &routes6)),
            json!({"ip_gw": true, "ip4_gw": "192.0.2.1", "ip6_gw": "fd00::1"})
        );
        assert_eq!(
            Value::Object(gateway_grains(&[], &[])),
            json!({"ip_gw": false, "ip4_gw": false, "ip6_gw": false})
        );
    }

    #[test]
    fn resolv_conf_like_salt() {
        assert_eq!(
            parse_resolv("nameserver 10.255.255.53\n"),
            json!({"nameservers": ["10.255.255.53"], "ip4_nameservers": ["10.255.255.53"],
                   "ip6_nameservers": [], "sortlist": [], "domain": "", "search": [], "options": []})
        );
        let text = "# comment\nnameserver 1.1.1.1\nnameserver 2606:4700::1111 # cf\nnameserver 1.1.1.1\n\
                    search a.example b.example ; x\ndomain example.com\nsortlist 130.155.160.0/255.255.240.0 130.155.0.0\n\
                    options ndots:2\noptions ndots:2\nnameserver bogus\n";
        assert_eq!(
            parse_resolv(text),
            json!({"nameservers": ["1.1.1.1", "2606:4700::1111"], "ip4_nameservers": ["1.1.1.1"],
                   "ip6_nameservers": ["2606:4700::1111"],
                   "sortlist": ["130.155.160.0/255.255.240.0", "130.155.0.0/255.255.0.0"],
                   "domain": "example.com", "search": ["a.example", "b.example"], "options": ["ndots:2"]})
        );
    }

    #[test]
    fn fqdns_come_from_hosts() {
        let hosts = "127.0.0.1 localhost localhost.localdomain\n192.0.2.2 vm.example.com vm # me\n10.0.0.9 other.example\n";
        let addrs: Vec<IpAddr> = ["127.0.0.1", "192.0.2.2"]
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        assert_eq!(fqdns_from_hosts(hosts, &addrs), ["vm.example.com"]);
    }

    #[test]
    fn address_grains_shape() {
        let lo = Interface {
            name: "lo".into(),
            hwaddr: Some("00:00:00:00:00:00".into()),
            inet: vec![(Ipv4Addr::LOCALHOST, None, None)],
            inet6: vec![(Ipv6Addr::LOCALHOST, 128)],
            up: true,
        };
        let eth = Interface {
            name: "eth0".into(),
            hwaddr: Some("02:fc:00:00:00:01".into()),
            inet: vec![(Ipv4Addr::new(192, 0, 2, 2), None, None)],
            inet6: vec![],
            up: true,
        };
        assert_eq!(
            Value::Object(address_grains(&[lo, eth])),
            json!({
                "hwaddr_interfaces": {"lo": "00:00:00:00:00:00", "eth0": "02:fc:00:00:00:01"},
                "ip4_interfaces": {"lo": ["127.0.0.1"], "eth0": ["192.0.2.2"]},
                "ip6_interfaces": {"lo": ["::1"], "eth0": []},
                "ip_interfaces": {"lo": ["127.0.0.1", "::1"], "eth0": ["192.0.2.2"]},
                "ipv4": ["127.0.0.1", "192.0.2.2"],
                "ipv6": ["::1"],
            })
        );
    }
}
