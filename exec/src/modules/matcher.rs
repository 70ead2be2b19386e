//! Salt's `match` module (`salt/modules/match.py`): whether this minion matches a target
//! expression (`match.compound`, `match.grain`, ...), as SLS Jinja asks with
//! `salt['match.compound'](...)`, and `filter_by`/`search_by`/`ifelse` over such targets.
//! Matching is the minion's own check in `saltq_semantics::target` (grains and pillar of
//! None count as empty); an expression that does not parse does not match, as Salt's
//! functions log the error and answer False.

use serde_json::{Map, Value};

use saltq_semantics::python::{self, truthy};
use saltq_semantics::target::{MinionFacts, Nodegroups, Target, TargetType};

use crate::error::ExecError;
use crate::modules::pillar::merge_into;
use crate::spec::{Call, Function, Lit, Param};

const TGT_ID: &[Param] = &[Param::req("tgt"), Param::opt("minion_id", Lit::None)];
const TGT_DELIM: &[Param] = &[Param::req("tgt"), Param::opt("delimiter", Lit::Str(":"))];

/// The `match` module's functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::new("match.compound", handler!(compound))
        .params(TGT_ID)
        .doc(COMPOUND_DOC),
    Function::new("match.data", handler!(data))
        .params(&[Param::req("tgt")])
        .doc(DATA_DOC),
    Function::new("match.filter_by", handler!(filter_by))
        .params(&[
            Param::req("lookup"),
            Param::opt("tgt_type", Lit::Str("compound")),
            Param::opt("minion_id", Lit::None),
            Param::opt("merge", Lit::None),
            Param::opt("merge_lists", Lit::Bool(false)),
            Param::opt("default", Lit::Str("default")),
        ])
        .doc(FILTER_BY_DOC),
    Function::new("match.glob", handler!(glob))
        .params(TGT_ID)
        .doc(GLOB_DOC),
    Function::new("match.grain", handler!(grain))
        .params(TGT_DELIM)
        .doc(GRAIN_DOC),
    Function::new("match.grain_pcre", handler!(grain_pcre))
        .params(TGT_DELIM)
        .doc(GRAIN_PCRE_DOC),
    Function::new("match.ifelse", handler!(ifelse))
        .varargs()
        .params(&[
            Param::opt("tgt_type", Lit::Str("compound")).kwonly(),
            Param::opt("minion_id", Lit::None).kwonly(),
            Param::opt("merge", Lit::None).kwonly(),
            Param::opt("merge_lists", Lit::Bool(false)).kwonly(),
        ])
        .doc(IFELSE_DOC),
    Function::new("match.ipcidr", handler!(ipcidr))
        .params(&[Param::req("tgt")])
        .doc(IPCIDR_DOC),
    Function::new("match.list", handler!(list))
        .params(TGT_ID)
        .py_name("list_")
        .doc(LIST_DOC),
    Function::new("match.pcre", handler!(pcre))
        .params(TGT_ID)
        .doc(PCRE_DOC),
    Function::new("match.pillar", handler!(pillar))
        .params(TGT_DELIM)
        .doc(PILLAR_DOC),
    Function::new("match.pillar_pcre", handler!(pillar_pcre))
        .params(TGT_DELIM)
        .doc(PILLAR_PCRE_DOC),
    Function::new("match.search_by", handler!(search_by))
        .params(&[
            Param::req("lookup"),
            Param::opt("tgt_type", Lit::Str("compound")),
            Param::opt("minion_id", Lit::None),
        ])
        .doc(SEARCH_BY_DOC),
];

/// Whether this minion (or `minion_id`, for the id matchers) matches `tgt` read as `kind`;
/// `delimiter` for the grain and pillar matchers. Errors log and answer false, as Salt's.
fn matches(call: &Call, tgt: &Value, kind: TargetType, minion_id: &Value, delimiter: &str) -> bool {
    let tgt = match (kind, tgt) {
        (_, Value::String(s)) => s.clone(),
        (TargetType::Compound | TargetType::List, Value::Array(words)) => {
            let words: Vec<String> = words.iter().map(python::str).collect();
            if kind == TargetType::List {
                words.join(",")
            } else {
                words.join(" ")
            }
        }
        (TargetType::Compound, other) => {
            tracing::error!(
                "Compound target received that is neither string, list nor tuple: {other}"
            );
            return false;
        }
        (_, other) => python::str(other),
    };
    let nodegroups: Nodegroups = call
        .ctx
        .opt("nodegroups")
        .and_then(|n| serde_json::from_value(n.clone()).ok())
        .unwrap_or_default();
    let target = match Target::compile(&tgt, kind, Some(delimiter), &nodegroups) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("match.{kind}: {e}");
            return false;
        }
    };
    let own_id = call
        .ctx
        .opt("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let id = match minion_id {
        Value::Null => own_id,
        other => python::str(other),
    };
    let grains = call.ctx.grains();
    let pillar = call.ctx.pillar();
    target.matches(&MinionFacts {
        id: &id,
        grains: Some(&grains),
        pillar: Some(&pillar),
    })
}

/// `tgt` of kind `kind` against the minion id (`minion_id`, else this minion's).
fn on_id(call: &Call, kind: TargetType) -> bool {
    matches(call, call.arg("tgt"), kind, call.arg("minion_id"), ":")
}

/// `tgt` of kind `kind` against this minion's grains, pillar or addresses.
fn on_facts(call: &Call, kind: TargetType, delimiter: &str) -> bool {
    matches(call, call.arg("tgt"), kind, &Value::Null, delimiter)
}

fn delimiter(call: &Call) -> String {
    python::str(call.arg("delimiter"))
}

const COMPOUND_DOC: &str = "Return True if the minion ID matches the given compound target

minion_id
    Specify the minion ID to match against the target expression

    .. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' match.compound 'L@cheese,foo and *'
";

async fn compound(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_id(&call, TargetType::Compound)))
}

const GLOB_DOC: &str = "Return True if the minion ID matches the given glob target

minion_id
    Specify the minion ID to match against the target expression

    .. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' match.glob '*'
";

async fn glob(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_id(&call, TargetType::Glob)))
}

const LIST_DOC: &str = "Return True if the minion ID matches the given list target

minion_id
    Specify the minion ID to match against the target expression

    .. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' match.list 'server1,server2'
";

async fn list(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_id(&call, TargetType::List)))
}

const PCRE_DOC: &str = "Return True if the minion ID matches the given pcre target

minion_id
    Specify the minion ID to match against the target expression

    .. versionadded:: 2014.7.0

CLI Example:

.. code-block:: bash

    salt '*' match.pcre '.*'
";

async fn pcre(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_id(&call, TargetType::Pcre)))
}

const GRAIN_DOC: &str =
    "Return True if the minion matches the given grain target. The ``delimiter``
argument can be used to specify a different delimiter.

CLI Example:

.. code-block:: bash

    salt '*' match.grain 'os:Ubuntu'
    salt '*' match.grain 'ipv6|2001:db8::ff00:42:8329' delimiter='|'
";

async fn grain(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_facts(
        &call,
        TargetType::Grain,
        &delimiter(&call),
    )))
}

const GRAIN_PCRE_DOC: &str = "Return True if the minion matches the given grain_pcre target. The
``delimiter`` argument can be used to specify a different delimiter.

CLI Example:

.. code-block:: bash

    salt '*' match.grain_pcre 'os:Fedo.*'
    salt '*' match.grain_pcre 'ipv6|2001:.*' delimiter='|'
";

async fn grain_pcre(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_facts(
        &call,
        TargetType::GrainPcre,
        &delimiter(&call),
    )))
}

const PILLAR_DOC: &str = "Return True if the minion matches the given pillar target. The
``delimiter`` argument can be used to specify a different delimiter.

CLI Example:

.. code-block:: bash

    salt '*' match.pillar 'cheese:foo'
    salt '*' match.pillar 'clone_url|https://github.com/saltstack/salt.git' delimiter='|'
";

async fn pillar(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_facts(
        &call,
        TargetType::Pillar,
        &delimiter(&call),
    )))
}

const PILLAR_PCRE_DOC: &str = "Return True if the minion matches the given pillar_pcre target. The
``delimiter`` argument can be used to specify a different delimiter.

CLI Example:

.. code-block:: bash

    salt '*' match.pillar_pcre 'cheese:(swiss|american)'
    salt '*' match.pillar_pcre 'clone_url|https://github\\.com/.*\\.git' delimiter='|'
";

async fn pillar_pcre(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_facts(
        &call,
        TargetType::PillarPcre,
        &delimiter(&call),
    )))
}

const IPCIDR_DOC: &str = "Return True if the minion matches the given ipcidr target

CLI Example:

.. code-block:: bash

    salt '*' match.ipcidr '192.168.44.0/24'
";

async fn ipcidr(call: Call) -> Result<Value, ExecError> {
    Ok(Value::Bool(on_facts(&call, TargetType::Ipcidr, ":")))
}

const DATA_DOC: &str = "Return True if the minion matches the given data target: a ``key:value``
glob against the minion's data store (``data.*``), which saltq minions keep empty, so this
answers False.

CLI Example:

.. code-block:: bash

    salt '*' match.data 'spam:eggs'
";

async fn data(call: Call) -> Result<Value, ExecError> {
    let tgt = python::str(call.arg("tgt"));
    let store = Value::Object(Map::new());
    Ok(Value::Bool(saltq_semantics::target::subdict_match(
        &store,
        &tgt,
        ":",
        saltq_semantics::target::MatchMode::Glob,
    )))
}

/// One matcher of this module by its Python name, as `filter_by`'s `tgt_type` names it:
/// the target with the second positional argument (`minion_id`, or for the data matchers
/// the delimiter).
fn by_name(call: &Call, tgt_type: &str, tgt: &Value, second: &Value) -> Result<bool, ExecError> {
    let second_text = || match second {
        Value::Null => ":".to_owned(),
        other => python::str(other),
    };
    let kind = match tgt_type {
        "compound" => TargetType::Compound,
        "glob" => TargetType::Glob,
        "list_" => TargetType::List,
        "pcre" => TargetType::Pcre,
        "ipcidr" => TargetType::Ipcidr,
        "grain" => TargetType::Grain,
        "grain_pcre" => TargetType::GrainPcre,
        "pillar" => TargetType::Pillar,
        "pillar_pcre" => TargetType::PillarPcre,
        "data" => return Ok(false),
        other => return Err(ExecError::exception("KeyError", format!("'{other}'"))),
    };
    Ok(match kind {
        TargetType::Compound | TargetType::Glob | TargetType::List | TargetType::Pcre => {
            matches(call, tgt, kind, second, ":")
        }
        _ => matches(call, tgt, kind, &Value::Null, &second_text()),
    })
}

/// `match.filter_by` itself, shared with `ifelse`.
fn filter(
    call: &Call,
    lookup: &Value,
    tgt_type: &str,
    minion_id: &Value,
    merge: &Value,
    merge_lists: bool,
    default: &str,
) -> Result<Value, ExecError> {
    let Value::Object(lookup) = lookup else {
        return Err(ExecError::exception(
            "AttributeError",
            format!(
                "'{}' object has no attribute 'get'",
                python::type_name(lookup)
            ),
        ));
    };
    let second = if truthy(minion_id) {
        minion_id.clone()
    } else {
        Value::Null
    };
    for (key, value) in lookup {
        if by_name(call, tgt_type, &Value::String(key.clone()), &second)? {
            if truthy(merge) {
                let Value::Object(m) = merge else {
                    return Err(ExecError::exception(
                        "SaltException",
                        "filter_by merge argument must be a dictionary.",
                    ));
                };
                return match value {
                    Value::Null => Ok(merge.clone()),
                    Value::Object(v) => {
                        let mut v = v.clone();
                        merge_into(&mut v, m, merge_lists);
                        Ok(Value::Object(v))
                    }
                    _ => Err(ExecError::InvalidArguments(
                        "Cannot update using non-dict types in dictupdate.update()".into(),
                    )),
                };
            }
            return Ok(value.clone());
        }
    }
    Ok(lookup.get(default).cloned().unwrap_or(Value::Null))
}

const FILTER_BY_DOC: &str = "Return the first match in a dictionary of target patterns

CLI Example:

.. code-block:: bash

    salt '*' match.filter_by '{foo*: Foo!, bar*: Bar!}' minion_id=bar03

Pillar Example:

.. code-block:: jinja

    # Filter the data for the current minion into a variable:
    {% set roles = salt['match.filter_by']({
        'web*': ['app', 'caching'],
        'db*': ['db'],
    }, minion_id=grains['id'], default='web*') %}
";

async fn filter_by(call: Call) -> Result<Value, ExecError> {
    filter(
        &call,
        call.arg("lookup"),
        &python::str(call.arg("tgt_type")),
        call.arg("minion_id"),
        call.arg("merge"),
        truthy(call.arg("merge_lists")),
        &python::str(call.arg("default")),
    )
}

const SEARCH_BY_DOC: &str = "Search a dictionary of target strings for matching targets

This is the inverse of ``match.filter_by`` and allows matching values instead of
matching keys. A minion can be matched by multiple entries.

CLI Example:

.. code-block:: bash

    salt '*' match.search_by '{web: [node1, node2], db: [node2, node]}'
";

async fn search_by(call: Call) -> Result<Value, ExecError> {
    let Value::Object(lookup) = call.arg("lookup") else {
        return Err(ExecError::exception(
            "AttributeError",
            format!(
                "'{}' object has no attribute 'items'",
                python::type_name(call.arg("lookup"))
            ),
        ));
    };
    let tgt_type = python::str(call.arg("tgt_type"));
    let minion_id = call.arg("minion_id");
    let second = if truthy(minion_id) {
        minion_id.clone()
    } else {
        Value::Null
    };
    let mut found = Vec::new();
    for (key, targets) in lookup {
        let targets: Vec<Value> = match targets {
            Value::Array(a) => a.clone(),
            Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
            Value::Object(m) => m.keys().map(|k| Value::String(k.clone())).collect(),
            other => {
                return Err(ExecError::InvalidArguments(format!(
                    "'{}' object is not iterable",
                    python::type_name(other)
                )));
            }
        };
        for target in &targets {
            if by_name(&call, &tgt_type, target, &second)? {
                found.push(Value::String(key.clone()));
            }
        }
    }
    Ok(if found.is_empty() {
        Value::Null
    } else {
        Value::Array(found)
    })
}

const IFELSE_DOC: &str = "Evaluate each pair of arguments up to the last one as a (matcher, value)
tuple, returning ``value`` if matched.  If none match, returns the last
argument. A matcher of True always matches, one of False never does.

.. versionadded:: 3006.0

CLI Example:

.. code-block:: bash

    salt '*' match.ifelse 'foo*' 'Foo!' 'bar*' 'Bar!' minion_id=bar03
";

async fn ifelse(call: Call) -> Result<Value, ExecError> {
    let args = call.varargs();
    if args.len().is_multiple_of(2) {
        return Err(ExecError::exception(
            "SaltException",
            "The ifelse function must have an odd number of arguments!",
        ));
    }
    if args.len() == 1 {
        return Ok(args[0].clone());
    }
    const DEFAULT_KEY: &str = "SALT_IFELSE_FUNCTION_DEFAULT";
    let mut lookup = Map::new();
    for pair in args[..args.len() - 1].chunks(2) {
        let key = match &pair[0] {
            Value::Bool(true) => "*".to_owned(),
            Value::Bool(false) => "SALT_IFELSE_MATCH_NOTHING".to_owned(),
            other => python::str(other),
        };
        lookup.insert(key, pair[1].clone());
    }
    lookup.insert(DEFAULT_KEY.to_owned(), args[args.len() - 1].clone());
    filter(
        &call,
        &Value::Object(lookup),
        &python::str(call.arg("tgt_type")),
        call.arg("minion_id"),
        call.arg("merge"),
        truthy(call.arg("merge_lists")),
        DEFAULT_KEY,
    )
}
