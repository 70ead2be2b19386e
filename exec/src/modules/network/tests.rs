//! `network.*`: parsers checked as data against salt 3007.8's answers, then every function
//! on this host (a TCP listener of the test's own for `connect`).

use serde_json::{Value, json};

use super::*;
use crate::testutil::{check, run, run_kw};

#[test]
fn proc_net_tcp_like_salt() {
    let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 020200C0:8344 5071CECB:01BB 01 00000000:00000000 00:00000000 00000000     0        0 1\n   1: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2\n";
    let tcp6 = "  sl  local_address                         remote_address                        st\n   0: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D431 01 0\n   1: 000080FD000000000000000002000000:0016 000080FD000000000000000001000000:C350 01 0\n";
    assert_eq!(
        parse_tcp(&[tcp.into(), tcp6.into()]),
        json!({
            "0": {"local_addr": "192.0.2.2", "local_port": 33604, "remote_addr": "203.206.113.80", "remote_port": 443},
            "1": {"local_addr": "::ffff:127.0.0.1", "local_port": 8080, "remote_addr": "::ffff:127.0.0.1", "remote_port": 54321},
            "2": {"local_addr": "fd80::2", "local_port": 22, "remote_addr": "fd80::1", "remote_port": 50000},
        })
    );
}

#[test]
fn subnets_and_privacy() {
    let ip = |s: &str| {
        s.parse::<IpAddr>()
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    };
    assert!(in_subnet("192.0.2.0/24", &ip("192.0.2.2")));
    assert!(!in_subnet("192.0.3.0/24", &ip("192.0.2.2")));
    assert!(in_subnet("fd00::/64", &ip("fd00::2")));
    assert!(in_subnet("10.1.2.3", &ip("10.1.2.3")));
    assert!(!in_subnet("10.0.0.0/8", &ip("fd00::2")));
    for (addr, private) in [
        ("192.0.2.2", true),
        ("10.0.0.1", true),
        ("8.8.8.8", false),
        ("fd00::2", true),
        ("2606:4700::1111", false),
    ] {
        assert_eq!(is_private(&ip(addr)), private, "{addr}");
    }
}

#[test]
fn default_routes_like_salt() {
    let v4 = crate::grains::net::parse_route4(
        "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\n",
    );
    let v6 = crate::grains::net::parse_route6(
        "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n",
    );
    let got: Vec<Value> = v4.iter().chain(&v6).map(route_dict).collect();
    // salt 3007.8's network.default_route on this machine.
    assert_eq!(
        got,
        [
            json!({"addr_family": "inet", "destination": "0.0.0.0", "gateway": "192.0.2.1", "netmask": "0.0.0.0", "flags": "UG", "interface": "eth0"}),
            json!({"addr_family": "inet6", "destination": "::/0", "gateway": "fd00::1", "netmask": "", "flags": "UG", "interface": "eth0"}),
            json!({"addr_family": "inet6", "destination": "::/0", "gateway": "::", "netmask": "", "flags": "!n", "interface": "lo"}),
        ]
    );
}

#[tokio::test]
async fn every_function_on_this_host() {
    let ifaces = run("network.interfaces", json!([])).await.ret;
    let lo = &ifaces["lo"];
    assert_eq!(lo["up"], json!(true));
    assert_eq!(
        lo["inet"][0],
        json!({"address": "127.0.0.1", "netmask": "255.0.0.0", "broadcast": null, "label": "lo"})
    );
    if let Some(v6) = lo.get("inet6") {
        assert_eq!(
            v6[0],
            json!({"address": "::1", "prefixlen": "128", "scope": "host"})
        );
    }
    let v4 = run("network.ip_addrs", json!([])).await.ret;
    assert!(
        !v4.as_array()
            .is_some_and(|a| a.contains(&json!("127.0.0.1")))
    );
    let with_lo = run_kw(
        "network.ip_addrs",
        json!([]),
        json!({"include_loopback": true}),
    )
    .await
    .ret;
    assert!(
        with_lo
            .as_array()
            .is_some_and(|a| a.contains(&json!("127.0.0.1")))
    );
    check(
        "network.ip_addrs",
        json!([]),
        json!({"cidr": "127.0.0.0/8", "include_loopback": true}),
        json!(["127.0.0.1"]),
        0,
    )
    .await;
    check(
        "network.ip_addrs",
        json!(["lo"]),
        json!({"type": "public"}),
        json!([]),
        0,
    )
    .await;
    let v6 = run_kw(
        "network.ip_addrs6",
        json!([]),
        json!({"include_loopback": true}),
    )
    .await
    .ret;
    assert!(v6.is_array());
    let first = ifaces
        .as_object()
        .and_then(|m| m.iter().find(|(_, v)| v.get("hwaddr").is_some()));
    if let Some((name, iface)) = first {
        check(
            "network.hw_addr",
            json!([name]),
            json!({}),
            iface["hwaddr"].clone(),
            0,
        )
        .await;
    }
    let out = run("network.hw_addr", json!(["nosuch0"])).await;
    assert!(out.ret.as_str().is_some_and(|s| s.starts_with("Interface \"nosuch0\" not in available interfaces: \"")));
    check(
        "network.get_hostname",
        json!([]),
        json!({}),
        json!(gethostname::gethostname().to_string_lossy()),
        0,
    )
    .await;
    let routes = run("network.default_route", json!([])).await.ret;
    assert!(routes.as_array().is_some_and(|r| {
        r.iter()
            .all(|r| r["destination"] == json!("0.0.0.0") || r["destination"] == json!("::/0"))
    }));
    check(
        "network.default_route",
        json!(["inet9"]),
        json!({}),
        json!("ERROR: Invalid address family inet9"),
        1,
    )
    .await;
    let tcp = run("network.active_tcp", json!([])).await.ret;
    assert!(tcp.is_object());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    check(
        "network.connect",
        json!(["127.0.0.1", port]),
        json!({}),
        json!({"result": true, "comment": format!("Successfully connected to 127.0.0.1 (127.0.0.1) on tcp port {port}")}),
        0,
    )
    .await;
    drop(listener);
    // salt 3007.8 for a closed port and a missing one.
    check(
        "network.connect",
        json!(["127.0.0.1", port]),
        json!({"timeout": 2}),
        json!({"result": false, "comment": format!("Unable to connect to 127.0.0.1 (127.0.0.1) on tcp port {port}")}),
        1,
    )
    .await;
    check(
        "network.connect",
        json!(["127.0.0.1"]),
        json!({}),
        json!({"result": false, "comment": "Required argument, port, is missing."}),
        1,
    )
    .await;
    check(
        "network.connect",
        json!(["no-such-host.invalid", 80]),
        json!({}),
        json!({"result": false, "comment": "Unable to resolve host no-such-host.invalid on tcp port 80"}),
        1,
    )
    .await;

    match crate::modules::cmd::which_path("ping") {
        Some(_) => {
            let ok = run_kw(
                "network.ping",
                json!(["127.0.0.1"]),
                json!({"return_boolean": true, "timeout": 1}),
            )
            .await;
            assert!(ok.ret.is_boolean());
        }
        None => {
            println!("network.ping: no ping command on this machine, checking the error only");
            check(
                "network.ping",
                json!(["127.0.0.1"]),
                json!({}),
                json!("Command required for 'network.ping' not found: ping"),
                1,
            )
            .await;
        }
    }
}
