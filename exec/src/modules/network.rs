//! Salt's `network` module on Linux: interfaces and addresses (`getifaddrs`), routes and TCP
//! connections (`/proc/net`), `ping` (the `ping` command) and `connect` (a TCP or UDP socket).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use serde_json::{Map, Value, json};

use saltq_semantics::python::{self, truthy};

use crate::error::ExecError;
use crate::grains::net::{Interface, Route, interfaces, read_routes};
use crate::modules::run_cmd;

use crate::spec::{Call, Function, Lit, Param};

/// The `network` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("network.active_tcp", handler!(active_tcp)).doc(ACTIVE_TCP_DOC),
    Function::new("network.connect", handler!(connect))
        .params(&[Param::req("host"), Param::opt("port", Lit::None)])
        .kwargs()
        .doc(CONNECT_DOC),
    Function::new("network.default_route", handler!(default_route))
        .params(&[Param::opt("family", Lit::None)])
        .doc(DEFAULT_ROUTE_DOC),
    Function::new("network.get_hostname", handler!(get_hostname)).doc(GET_HOSTNAME_DOC),
    Function::new("network.hw_addr", handler!(hw_addr))
        .params(&[Param::req("iface")])
        .doc(HW_ADDR_DOC),
    Function::new("network.interfaces", handler!(interfaces_fn)).doc(INTERFACES_DOC),
    Function::new("network.ip_addrs", handler!(ip_addrs))
        .params(&[
            Param::opt("interface", Lit::None),
            Param::opt("include_loopback", Lit::Bool(false)),
            Param::opt("cidr", Lit::None),
            Param::opt("type", Lit::None),
        ])
        .doc(IP_ADDRS_DOC),
    Function::new("network.ip_addrs6", handler!(ip_addrs6))
        .params(&[
            Param::opt("interface", Lit::None),
            Param::opt("include_loopback", Lit::Bool(false)),
            Param::opt("cidr", Lit::None),
        ])
        .doc(IP_ADDRS6_DOC),
    Function::new("network.ping", handler!(ping))
        .params(&[
            Param::req("host"),
            Param::opt("timeout", Lit::Bool(false)),
            Param::opt("return_boolean", Lit::Bool(false)),
        ])
        .doc(PING_DOC),
];

/// The scope Linux reports for an IPv6 address.
fn scope6(addr: &Ipv6Addr) -> &'static str {
    let first = addr.segments()[0];
    if addr.is_loopback() {
        "host"
    } else if first & 0xffc0 == 0xfe80 {
        "link"
    } else if first & 0xffc0 == 0xfec0 {
        "site"
    } else {
        "global"
    }
}

/// Salt's `interfaces()` entry for one interface.
pub(crate) fn interface_dict(iface: &Interface) -> Value {
    let mut m = Map::new();
    m.insert("up".into(), json!(iface.up));
    if let Some(hw) = &iface.hwaddr {
        m.insert("hwaddr".into(), json!(hw));
    }
    if !iface.inet.is_empty() {
        let inet: Vec<Value> = iface
            .inet
            .iter()
            .map(|(a, mask, bcast)| {
                json!({"address": a.to_string(), "netmask": mask.map(|m| m.to_string()),
                       "broadcast": bcast.map(|b| b.to_string()), "label": iface.name})
            })
            .collect();
        m.insert("inet".into(), Value::Array(inet));
    }
    if !iface.inet6.is_empty() {
        let inet6: Vec<Value> = iface
            .inet6
            .iter()
            .map(|(a, prefix)| {
                json!({"address": a.to_string(), "prefixlen": prefix.to_string(), "scope": scope6(a)})
            })
            .collect();
        m.insert("inet6".into(), Value::Array(inet6));
    }
    Value::Object(m)
}

const INTERFACES_DOC: &str = "Return the network interfaces: ``{name: {up, hwaddr, inet, inet6}}``,
``inet`` a list of ``{address, netmask, broadcast, label}``, ``inet6`` of ``{address,
prefixlen, scope}``

CLI Example:

.. code-block:: bash

    salt '*' network.interfaces
";

async fn interfaces_fn(_call: Call) -> Result<Value, ExecError> {
    Ok(Value::Object(
        interfaces()
            .iter()
            .map(|i| (i.name.clone(), interface_dict(i)))
            .collect(),
    ))
}

/// Python's `ipaddress` `is_private`, for `type=private|public`.
pub(crate) fn is_private(ip: &IpAddr) -> bool {
    let in_net = |net: &str| in_subnet(net, ip);
    let v4: &[&str] = &[
        "0.0.0.0/8",
        "10.0.0.0/8",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/29",
        "192.0.0.170/31",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "240.0.0.0/4",
        "255.255.255.255/32",
    ];
    let v6: &[&str] = &[
        "::1/128",
        "::/128",
        "::ffff:0:0/96",
        "100::/64",
        "2001::/23",
        "2001:2::/48",
        "2001:db8::/32",
        "2001:10::/28",
        "fc00::/7",
        "fe80::/10",
    ];
    match ip {
        IpAddr::V4(_) => v4.iter().any(|n| in_net(n)),
        IpAddr::V6(_) => v6.iter().any(|n| in_net(n)),
    }
}

/// Whether `ip` is inside `cidr` (`10.0.0.0/8`, `fd00::/64`, or one address).
pub(crate) fn in_subnet(cidr: &str, ip: &IpAddr) -> bool {
    let (net, bits) = cidr.split_once('/').unwrap_or((cidr, ""));
    let Ok(net) = net.parse::<IpAddr>() else {
        return false;
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let bits: u32 = bits.parse().unwrap_or(32).min(32);
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(n) & mask == u32::from(*a) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(a)) => {
            let bits: u32 = bits.parse().unwrap_or(128).min(128);
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(n) & mask == u128::from(*a) & mask
        }
        _ => false,
    }
}

/// The addresses of one family on up interfaces (or the one named), sorted and unique,
/// loopback left out unless asked for.
fn addrs(call: &Call, v6: bool) -> Vec<IpAddr> {
    let only = call.opt_arg("interface").map(python::str);
    let loopback = truthy(call.arg("include_loopback"));
    let mut out: Vec<IpAddr> = interfaces()
        .iter()
        .filter(|i| only.as_ref().is_none_or(|n| *n == i.name))
        .flat_map(|i| {
            let v4s = i.inet.iter().map(|(a, _, _)| IpAddr::V4(*a));
            let v6s = i.inet6.iter().map(|(a, _)| IpAddr::V6(*a));
            v4s.chain(v6s).collect::<Vec<_>>()
        })
        .filter(|a| a.is_ipv6() == v6 && (loopback || !a.is_loopback()))
        .collect();
    out.sort();
    out.dedup();
    if let Some(cidr) = call.opt_arg("cidr").map(python::str) {
        out.retain(|a| in_subnet(&cidr, a));
    }
    out
}

fn strings(addrs: Vec<IpAddr>) -> Value {
    addrs.iter().map(ToString::to_string).collect()
}

const IP_ADDRS_DOC: &str = "Return the IPv4 addresses of the minion, sorted, loopback left out
unless ``include_loopback=True``; only those of ``interface``, in ``cidr``, or of ``type``
``public``/``private`` when given

CLI Example:

.. code-block:: bash

    salt '*' network.ip_addrs
    salt '*' network.ip_addrs cidr=10.0.0.0/8
    salt '*' network.ip_addrs type=private
";

async fn ip_addrs(call: Call) -> Result<Value, ExecError> {
    let mut found = addrs(&call, false);
    match call.opt_arg("type").map(python::str).as_deref() {
        Some("public") if call.opt_arg("cidr").is_none() => found.retain(|a| !is_private(a)),
        Some("private") if call.opt_arg("cidr").is_none() => found.retain(is_private),
        _ => {}
    }
    Ok(strings(found))
}

const IP_ADDRS6_DOC: &str = "Return the IPv6 addresses of the minion, sorted, loopback left out
unless ``include_loopback=True``; only those of ``interface`` or in ``cidr`` when given

CLI Example:

.. code-block:: bash

    salt '*' network.ip_addrs6
";

async fn ip_addrs6(call: Call) -> Result<Value, ExecError> {
    Ok(strings(addrs(&call, true)))
}

const HW_ADDR_DOC: &str = "Return the hardware address (MAC) of an interface

CLI Example:

.. code-block:: bash

    salt '*' network.hw_addr eth0
";

async fn hw_addr(call: Call) -> Result<Value, ExecError> {
    let name = python::str(call.arg("iface"));
    let all = interfaces();
    match all.iter().find(|i| i.name == name) {
        Some(i) => Ok(json!(i.hwaddr.clone().unwrap_or_default())),
        None => {
            let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
            Ok(json!(format!(
                "Interface \"{name}\" not in available interfaces: \"{}\"",
                names.join("\", \"")
            )))
        }
    }
}

const GET_HOSTNAME_DOC: &str = "Return the minion's host name

CLI Example:

.. code-block:: bash

    salt '*' network.get_hostname
";

async fn get_hostname(_call: Call) -> Result<Value, ExecError> {
    Ok(json!(gethostname::gethostname().to_string_lossy()))
}

const DEFAULT_ROUTE_DOC: &str =
    "Return the default routes, of one ``family`` (``inet`` or ``inet6``)
or both: a list of ``{addr_family, destination, gateway, netmask, flags, interface}``

CLI Example:

.. code-block:: bash

    salt '*' network.default_route
";

/// Salt's route dict for a default route from the kernel's tables.
pub(crate) fn route_dict(r: &Route) -> Value {
    const RTF_REJECT: u32 = 0x200;
    let v6 = r.destination.is_ipv6();
    let flags = if r.flags & RTF_REJECT != 0 {
        "!n"
    } else if r.gateway.is_unspecified() {
        "U"
    } else {
        "UG"
    };
    json!({
        "addr_family": if v6 { "inet6" } else { "inet" },
        "destination": if v6 { "::/0" } else { "0.0.0.0" },
        "gateway": r.gateway.to_string(),
        "netmask": if v6 { "" } else { "0.0.0.0" },
        "flags": flags,
        "interface": r.iface,
    })
}

async fn default_route(call: Call) -> Result<Value, ExecError> {
    let family = call.opt_arg("family").map(python::str);
    if let Some(f) = family.as_deref().filter(|f| *f != "inet" && *f != "inet6") {
        return Err(ExecError::execution(format!("Invalid address family {f}")));
    }
    let (v4, v6) = read_routes();
    let pick = |routes: Vec<Route>, name: &str| -> Vec<Value> {
        if family.as_deref().is_some_and(|f| f != name) {
            return Vec::new();
        }
        routes
            .iter()
            .filter(|r| r.prefix == 0)
            .map(route_dict)
            .collect()
    };
    let mut out = pick(v4, "inet");
    out.extend(pick(v6, "inet6"));
    Ok(Value::Array(out))
}

const ACTIVE_TCP_DOC: &str = "Return the established TCP connections: ``{n: {local_addr,
local_port, remote_addr, remote_port}}``

CLI Example:

.. code-block:: bash

    salt '*' network.active_tcp
";

/// Salt's `hex2ip(hex, invert=True)` for `/proc/net/tcp*` addresses.
pub(crate) fn hex2ip(hex: &str) -> String {
    if hex.len() == 8 {
        return u32::from_str_radix(hex, 16)
            .map(|n| Ipv4Addr::from(n.swap_bytes()).to_string())
            .unwrap_or_default();
    }
    let words: Option<Vec<u32>> = (0..4)
        .map(|i| {
            hex.get(i * 8..i * 8 + 8)
                .and_then(|w| u32::from_str_radix(w, 16).ok())
        })
        .collect();
    let Some(words) = words else {
        return String::new();
    };
    let mut bytes = [0u8; 16];
    for (i, w) in words.iter().enumerate() {
        bytes[i * 4..i * 4 + 4].copy_from_slice(&w.swap_bytes().to_be_bytes());
    }
    let addr = Ipv6Addr::from(bytes);
    match addr.to_ipv4_mapped() {
        Some(v4) => format!("::ffff:{v4}"),
        None => addr.to_string(),
    }
}

/// The established connections of `/proc/net/tcp` and `tcp6` texts, numbered from 0.
pub(crate) fn parse_tcp(tables: &[String]) -> Value {
    let mut out = Map::new();
    for line in tables.iter().flat_map(|t| t.lines()) {
        let c: Vec<&str> = line.split_whitespace().collect();
        if c.first().is_none_or(|s| *s == "sl") || c.len() < 4 || c[3] != "01" {
            continue;
        }
        let split = |s: &str| {
            let (a, p) = s.split_once(':').unwrap_or((s, "0"));
            (hex2ip(a), u16::from_str_radix(p, 16).unwrap_or(0))
        };
        let ((la, lp), (ra, rp)) = (split(c[1]), split(c[2]));
        out.insert(
            out.len().to_string(),
            json!({"local_addr": la, "local_port": lp, "remote_addr": ra, "remote_port": rp}),
        );
    }
    Value::Object(out)
}

async fn active_tcp(_call: Call) -> Result<Value, ExecError> {
    let tables: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    Ok(parse_tcp(&tables))
}

const PING_DOC: &str = "Ping a host four times with the ``ping`` command and return its output;
with ``return_boolean=True``, whether it answered. ``timeout`` is ``ping -W``.

CLI Example:

.. code-block:: bash

    salt '*' network.ping archlinux.org
    salt '*' network.ping archlinux.org timeout=3
";

async fn ping(call: Call) -> Result<Value, ExecError> {
    // Salt's sanitize_host, allowing `:` for IPv6 addresses (no shell is involved).
    let host: String = python::str(call.arg("host"))
        .chars()
        .take(255)
        .filter(|c| c.is_ascii_alphanumeric() || ".-_:".contains(*c))
        .collect();
    let timeout = call
        .opt_arg("timeout")
        .filter(|v| truthy(v))
        .map(python::str);
    let mut argv = vec!["ping"];
    if let Some(t) = &timeout {
        argv.extend(["-W", t.as_str()]);
    }
    argv.extend(["-c", "4", host.as_str()]);
    let out = run_cmd(&call, &argv).await?;
    if truthy(call.arg("return_boolean")) {
        return Ok(Value::Bool(out.code == 0));
    }
    call.set_retcode(out.code);
    Ok(json!(format!("{}{}", out.stdout, out.stderr).trim_end()))
}

const CONNECT_DOC: &str = "Test that a port can be reached: ``{result, comment}``.

Keyword arguments: ``proto`` (``tcp`` or ``udp``, default ``tcp``), ``timeout`` (seconds,
default 5), ``family`` (``ipv4`` or ``ipv6``).

CLI Example:

.. code-block:: bash

    salt '*' network.connect archlinux.org 80
    salt '*' network.connect archlinux.org 80 timeout=3 family=ipv4
";

async fn connect(call: Call) -> Result<Value, ExecError> {
    let answer = |ok: bool, comment: String| json!({"result": ok, "comment": comment});
    let host = call.opt_arg("host").map(python::str).unwrap_or_default();
    if host.is_empty() {
        return Ok(answer(false, "Required argument, host, is missing.".into()));
    }
    let Some(port) = call.opt_arg("port").filter(|v| truthy(v)).map(python::str) else {
        return Ok(answer(false, "Required argument, port, is missing.".into()));
    };
    let kw = call.kwargs();
    let udp = kw.get("proto").map(python::str).as_deref() == Some("udp");
    let proto = if udp { "udp" } else { "tcp" };
    let secs = kw
        .get("timeout")
        .and_then(|v| v.as_f64().or_else(|| python::str(v).parse().ok()));
    let limit = Duration::from_secs_f64(secs.filter(|s| *s > 0.0).unwrap_or(5.0));
    let family = kw.get("family").map(python::str);
    let resolved: Vec<SocketAddr> = match tokio::net::lookup_host(format!("{host}:{port}")).await {
        Ok(addrs) => addrs
            .filter(|a| match family.as_deref() {
                Some("ipv4") => a.is_ipv4(),
                Some("ipv6") => a.is_ipv6(),
                _ => true,
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    let Some(addr) = resolved.first().copied() else {
        return Ok(answer(
            false,
            format!("Unable to resolve host {host} on {proto} port {port}"),
        ));
    };
    let reached = if udp {
        udp_probe(addr, limit).await
    } else {
        tcp_probe(addr, limit).await
    };
    Ok(if reached {
        answer(
            true,
            format!(
                "Successfully connected to {host} ({}) on {proto} port {port}",
                addr.ip()
            ),
        )
    } else {
        answer(
            false,
            format!(
                "Unable to connect to {host} ({}) on {proto} port {port}",
                addr.ip()
            ),
        )
    })
}

async fn tcp_probe(addr: SocketAddr, limit: Duration) -> bool {
    matches!(
        tokio::time::timeout(limit, tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
}

/// Sends one datagram and waits for any answer.
async fn udp_probe(addr: SocketAddr, limit: Duration) -> bool {
    let bind = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    };
    let Ok(sock) = tokio::net::UdpSocket::bind(bind).await else {
        return false;
    };
    if sock.send_to(b"saltq network.connect", addr).await.is_err() {
        return false;
    }
    let mut buf = [0u8; 255];
    matches!(
        tokio::time::timeout(limit, sock.recv_from(&mut buf)).await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests;
