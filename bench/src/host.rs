//! The host's own counters, recorded beside the figures: how busy the (shared) machine was, and
//! how many UDP datagrams the kernel dropped because a socket's receive buffer was full.

use serde_json::json;

/// Datagrams dropped system-wide because a receive buffer was full (`Udp: RcvbufErrors`).
pub fn udp_rcvbuf_errors() -> u64 {
    let text = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let mut udp = text.lines().filter(|l| l.starts_with("Udp: "));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RcvbufErrors")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system) a process has used so far, in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which ends at the last ')': state is field 3, utime 14.
    let rest = text.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i - 3)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    (ticks(14) + ticks(15)) / hz
}

/// Waits (at most a minute) until CPU pressure has decayed below 10%, so that what the previous
/// step left behind (Salt's hundred Python processes exiting) does not land on the next one.
pub fn settle() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    std::thread::sleep(std::time::Duration::from_secs(5));
    while std::time::Instant::now() < deadline {
        let busy = load()["cpu_pressure_some_avg10"]
            .as_f64()
            .is_some_and(|p| p >= 10.0);
        if !busy {
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}

/// How loaded the machine is now: load averages and CPU pressure (PSI).
pub fn load() -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let loadavg: Vec<f64> = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .filter_map(|v| v.parse().ok())
        .collect();
    let pressure = read("/proc/pressure/cpu")
        .lines()
        .find_map(|l| l.strip_prefix("some "))
        .and_then(|l| {
            l.split_whitespace()
                .find_map(|kv| kv.strip_prefix("avg10="))
        })
        .and_then(|v| v.parse::<f64>().ok());
    json!({ "loadavg": loadavg, "cpu_pressure_some_avg10": pressure })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_cpu_time() {
        let t = cpu_seconds(std::process::id());
        assert!(t >= 0.0);
        assert!(load()["loadavg"].as_array().is_some());
    }
}
