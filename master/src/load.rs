//! A job's load without I/O: validating a publish request, building the load that is stored,
//! announced and sent, and its JSON form in the job cache and on the event bus.

use chrono::{DateTime, Utc};
use saltq_proto::v1 as pb;
use saltq_semantics::jid::Jid;
use saltq_semantics::target::{Nodegroups, Target, TargetType};
use saltq_transport::value;
use serde_json::{Map, Value, json};
use tonic::Status;

/// A validated publish request.
pub struct PublishSpec {
    /// The target as given.
    pub tgt: String,
    /// Its type.
    pub tgt_type: TargetType,
    /// The load fields other than jid and user.
    pub req: pb::PublishRequest,
    /// How long the caller waits (Salt's `to`), when it says: a top master hands it to its
    /// syndics so their masters follow the job as long; the master's `timeout` otherwise.
    pub timeout: Option<std::time::Duration>,
}

/// Validates a publish request: function names and target, before anything is sent.
pub fn validate(
    req: pb::PublishRequest,
    nodegroups: &Nodegroups,
) -> Result<(PublishSpec, Target), Status> {
    if req.fun.is_empty() || req.fun.iter().any(|f| f.trim().is_empty()) {
        return Err(Status::invalid_argument(
            "no function given: fun must name at least one function, e.g. test.ping",
        ));
    }
    for f in &req.fun {
        if !f.contains('.') {
            return Err(Status::invalid_argument(format!(
                "invalid function name {f:?}: expected module.function, e.g. test.ping"
            )));
        }
    }
    if req.fun.len() > 1 && !req.arg.is_empty() && req.arg.len() != req.fun.len() {
        return Err(Status::invalid_argument(format!(
            "a multi-function job of {} functions needs one argument list per function, got {}",
            req.fun.len(),
            req.arg.len()
        )));
    }
    let tgt_type: TargetType =
        req.tgt_type
            .parse()
            .map_err(|e: saltq_semantics::target::TargetError| {
                Status::invalid_argument(e.to_string())
            })?;
    let delimiter = (!req.delimiter.is_empty()).then_some(req.delimiter.as_str());
    let target = Target::compile(&req.tgt, tgt_type, delimiter, nodegroups)
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
    Ok((
        PublishSpec {
            tgt: req.tgt.clone(),
            tgt_type,
            req,
            timeout: None,
        },
        target,
    ))
}

/// The load of a validated job published as `jid` by `user` at `now`. A nodegroup target, and
/// a compound target naming nodegroups (`N@`), are sent as the expanded compound expression,
/// as Salt does: minions have no nodegroups, and each re-checks the target it is sent.
pub fn make(
    spec: PublishSpec,
    target: &Target,
    jid: &Jid,
    user: &str,
    now: DateTime<Utc>,
) -> pb::JobLoad {
    let req = spec.req;
    let (tgt, tgt_type) = match (spec.tgt_type, target.expanded_compound()) {
        (TargetType::Nodegroup, Some(expr)) => (expr, TargetType::Compound),
        (TargetType::Compound, Some(expr)) if spec.tgt.contains("N@") => {
            (expr, TargetType::Compound)
        }
        _ => (spec.tgt, spec.tgt_type),
    };
    pb::JobLoad {
        jid: jid.to_string(),
        tgt,
        tgt_type: tgt_type.as_str().to_owned(),
        fun: req.fun,
        arg: req.arg,
        kwarg: req.kwarg,
        ret: req.ret,
        user: user.to_owned(),
        metadata: req.metadata,
        delimiter: req.delimiter,
        ret_config: req.ret_config,
        ret_kwargs: req.ret_kwargs,
        start_time: Some(prost_types::Timestamp {
            seconds: now.timestamp(),
            nanos: now.timestamp_subsec_nanos() as i32,
        }),
    }
}

/// Salt's `fun` field: a string for one function, a list for several.
pub fn fun_json(fun: &[String]) -> Value {
    match fun {
        [one] => Value::String(one.clone()),
        many => json!(many),
    }
}

/// The load as stored in the job cache and shown in `salt/job/<jid>/new`.
pub fn load_to_json(l: &pb::JobLoad) -> Value {
    let mut m = Map::new();
    m.insert("jid".into(), json!(l.jid));
    m.insert("tgt".into(), json!(l.tgt));
    m.insert("tgt_type".into(), json!(l.tgt_type));
    m.insert("fun".into(), fun_json(&l.fun));
    m.insert(
        "arg".into(),
        Value::Array(l.arg.iter().map(value::from_prost).collect()),
    );
    m.insert(
        "kwarg".into(),
        Value::Object(value::opt_struct(l.kwarg.as_ref())),
    );
    m.insert("ret".into(), json!(l.ret));
    m.insert("user".into(), json!(l.user));
    if let Some(md) = &l.metadata {
        m.insert("metadata".into(), Value::Object(value::struct_to_map(md)));
    }
    if !l.delimiter.is_empty() {
        m.insert("delimiter".into(), json!(l.delimiter));
    }
    Value::Object(m)
}

/// Rebuilds a load from its stored form.
pub fn load_from_json(v: &Value) -> pb::JobLoad {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let fun = match v.get("fun") {
        Some(Value::String(f)) => vec![f.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect(),
        _ => vec![],
    };
    let obj = |k: &str| match v.get(k) {
        Some(Value::Object(m)) => Some(value::map_to_struct(m)),
        _ => None,
    };
    pb::JobLoad {
        jid: s("jid"),
        tgt: s("tgt"),
        tgt_type: s("tgt_type"),
        fun,
        arg: v
            .get("arg")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(value::to_prost).collect())
            .unwrap_or_default(),
        kwarg: obj("kwarg"),
        ret: s("ret"),
        user: s("user"),
        metadata: obj("metadata"),
        delimiter: s("delimiter"),
        ret_config: String::new(),
        ret_kwargs: None,
        start_time: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(tgt: &str, tgt_type: &str, fun: &[&str]) -> pb::PublishRequest {
        pb::PublishRequest {
            tgt: tgt.into(),
            tgt_type: tgt_type.into(),
            fun: fun.iter().map(|f| (*f).to_owned()).collect(),
            ..Default::default()
        }
    }

    fn refused(r: pb::PublishRequest) -> String {
        match validate(r, &Nodegroups::new()) {
            Err(s) => {
                assert_eq!(s.code(), tonic::Code::InvalidArgument);
                s.message().to_owned()
            }
            Ok(_) => panic!("expected a refusal"),
        }
    }

    #[test]
    fn bad_requests_are_refused_naming_what_is_wrong() {
        assert!(refused(req("*", "glob", &[])).contains("no function given"));
        assert!(refused(req("*", "glob", &["ping"])).contains("invalid function name \"ping\""));
        assert!(refused(req("*", "sideways", &["test.ping"])).contains("sideways"));
        assert!(refused(req("G@os:Debian and and x", "compound", &["test.ping"])).contains("and"));
        let mut multi = req("*", "glob", &["test.ping", "test.echo"]);
        multi.arg = vec![value::to_prost(&json!([]))];
        assert!(refused(multi).contains("one argument list per function, got 1"));
    }

    #[test]
    fn nodegroup_is_sent_as_its_compound() {
        let mut groups = Nodegroups::new();
        groups.insert(
            "web".into(),
            saltq_semantics::target::NodegroupDef::Expr("L@web1,web2 or G@role:web".into()),
        );
        let (spec, target) = validate(req("web", "nodegroup", &["test.ping"]), &groups).unwrap();
        let jid = Jid::parse("20261124120000000001").unwrap();
        let load = make(spec, &target, &jid, "root", Utc::now());
        assert_eq!(load.tgt_type, "compound");
        assert!(load.tgt.contains("L@web1,web2"), "{}", load.tgt);
        assert_eq!(
            (load.jid.as_str(), load.user.as_str()),
            ("20261124120000000001", "root")
        );
    }

    /// Nodegroups named in a compound target reach the minions expanded: nested, list-form,
    /// in parentheses and after `not`. The minion, which has no nodegroups, must be able to
    /// compile what it is sent and decide as the master did.
    #[test]
    fn nodegroups_in_a_compound_are_sent_expanded() {
        use saltq_semantics::target::NodegroupDef;
        let mut groups = Nodegroups::new();
        groups.insert("webprod".into(), NodegroupDef::Expr("L@web1,web2".into()));
        groups.insert(
            "lbs".into(),
            NodegroupDef::Words(vec!["lb1".into(), "or".into(), "lb2".into()]),
        );
        groups.insert(
            "front".into(),
            NodegroupDef::Expr("N@webprod or N@lbs".into()),
        );
        let ids = ["web1", "web2", "lb1", "lb2", "db1"];
        for (tgt, expected) in [
            ("N@webprod or lb1", vec!["web1", "web2", "lb1"]),
            ("( N@front ) and not N@lbs", vec!["web1", "web2"]),
            ("not N@front", vec!["db1"]),
            ("db* or N@lbs", vec!["lb1", "lb2", "db1"]),
        ] {
            let (spec, target) =
                validate(req(tgt, "compound", &["test.ping"]), &groups).expect(tgt);
            let jid = Jid::parse("20261124120000000001").unwrap();
            let load = make(spec, &target, &jid, "root", Utc::now());
            assert_eq!(load.tgt_type, "compound");
            assert!(!load.tgt.contains("N@"), "{tgt} sent as {}", load.tgt);
            let on_minion =
                Target::compile(&load.tgt, TargetType::Compound, None, &Nodegroups::new())
                    .unwrap_or_else(|e| panic!("{tgt} sent as {:?}: {e}", load.tgt));
            let facts = |id| saltq_semantics::target::MinionFacts {
                id,
                grains: None,
                pillar: None,
            };
            let on_master: Vec<&str> = ids
                .into_iter()
                .filter(|id| target.matches(&facts(id)))
                .collect();
            let minions: Vec<&str> = ids
                .into_iter()
                .filter(|id| on_minion.matches(&facts(id)))
                .collect();
            assert_eq!(on_master, expected, "{tgt}");
            assert_eq!(minions, expected, "{tgt} sent as {}", load.tgt);
        }
        // A compound without nodegroups is sent as written.
        let (spec, target) = validate(
            req("web*  and  L@web1", "compound", &["test.ping"]),
            &groups,
        )
        .unwrap();
        let jid = Jid::parse("20261124120000000001").unwrap();
        assert_eq!(
            make(spec, &target, &jid, "root", Utc::now()).tgt,
            "web*  and  L@web1"
        );
    }

    #[test]
    fn load_json_round_trip_keeps_salt_fields() {
        let (spec, target) =
            validate(req("web*", "glob", &["test.arg"]), &Nodegroups::new()).unwrap();
        let jid = Jid::parse("20261124120000000002").unwrap();
        let mut load = make(spec, &target, &jid, "alice", Utc::now());
        load.arg = vec![value::to_prost(&json!("a")), value::to_prost(&json!(1))];
        let j = load_to_json(&load);
        assert_eq!(j["fun"], json!("test.arg"));
        assert_eq!(j["tgt_type"], json!("glob"));
        assert_eq!(j["arg"], json!(["a", 1]));
        let back = load_from_json(&j);
        assert_eq!(
            (back.jid, back.tgt, back.fun, back.user),
            (load.jid, load.tgt, load.fun, load.user)
        );
        assert_eq!(
            fun_json(&["a.b".into(), "c.d".into()]),
            json!(["a.b", "c.d"])
        );
    }
}
