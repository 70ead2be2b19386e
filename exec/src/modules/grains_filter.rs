//! Salt's `grains.filter_by` (`salt/modules/grains.py` over `salt.utils.data.filter_by`):
//! picks the entry of a lookup dict whose key (a glob) matches a grain's value, the way
//! nearly every formula's `map.jinja` chooses its per-OS settings. The rest of `grains` lives
//! in `grains.rs`.

use serde_json::Value;

use saltq_semantics::python::{self, fnmatch, truthy};
use saltq_semantics::target::traverse;

use crate::error::ExecError;
use crate::modules::pillar::merge_into;
use crate::spec::{Call, Function, Lit, Param};

/// `grains.filter_by`.
pub(crate) const FUNCTIONS: &[Function] = &[Function::new("grains.filter_by", handler!(filter_by))
    .params(&[
        Param::req("lookup_dict"),
        Param::opt("grain", Lit::Str("os_family")),
        Param::opt("merge", Lit::None),
        Param::opt("default", Lit::Str("default")),
        Param::opt("base", Lit::None),
    ])
    .doc(FILTER_BY_DOC)];

const FILTER_BY_DOC: &str = "Look up the given grain in a given dictionary for the current OS and
return the result

Although this may occasionally be useful at the CLI, the primary intent of this
function is for use in Jinja to make short work of creating lookup tables for
OS-specific data. For example:

.. code-block:: jinja

    {% set apache = salt['grains.filter_by']({
        'Debian': {'pkg': 'apache2', 'srv': 'apache2'},
        'RedHat': {'pkg': 'httpd', 'srv': 'httpd'},
    }, default='Debian') %}

:param lookup_dict: A dictionary, keyed by a grain, containing a value or
    values relevant to systems matching that grain. The keys are globs, matched
    against the grain's value (each item of a list grain, in order).
:param grain: The name of a grain to match with the current system's
    grains (``os_family`` unless given); it may reach into nested data with ``:``.
:param merge: A dictionary to merge with the results of the grain selection
    from ``lookup_dict``.
:param default: default lookup_dict's key used if the grain does not exists
    or if the grain value has no match on lookup_dict.
:param base: A lookup_dict key to use for a base dictionary. The
    grain-selected ``lookup_dict`` is merged over this and then finally
    the ``merge`` dictionary is merged.

CLI Example:

.. code-block:: bash

    salt '*' grains.filter_by '{Debian: Debheads rule, RedHat: I love my hat}'
    salt '*' grains.filter_by '{A: B, C: {D: {E: F, G: H}}}' 'xxx' '{D: {E: I}, J: K}' 'C'
";

/// `salt.utils.data.filter_by` over `grains`.
pub(crate) fn select(
    lookup_dict: &Value,
    grain: &str,
    grains: &Value,
    merge: &Value,
    default: &Value,
    base: &Value,
) -> Result<Value, ExecError> {
    let Value::Object(lookup) = lookup_dict else {
        return Err(ExecError::exception(
            "AttributeError",
            format!(
                "'{}' object has no attribute 'get'",
                python::type_name(lookup_dict)
            ),
        ));
    };
    let val = traverse(grains, grain, ":")
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let vals = match val {
        Value::Array(a) => a,
        other => vec![other],
    };
    let mut ret: Option<Value> = None;
    for each in &vals {
        let each = python::str(each);
        for (key, value) in lookup {
            if fnmatch(&each, key) {
                ret = Some(value.clone()).filter(|v| !v.is_null());
                break;
            }
        }
        if ret.is_some() {
            break;
        }
    }
    if ret.is_none() {
        ret = lookup.get(&python::str(default)).cloned();
    }
    if truthy(base)
        && let Some(base_values) = lookup.get(&python::str(base))
    {
        ret = match ret.take().filter(|v| !v.is_null()) {
            None => Some(base_values.clone()),
            Some(r) => match (base_values, &r) {
                (Value::Object(b), Value::Object(rm)) => {
                    let mut merged = b.clone();
                    merge_into(&mut merged, rm, false);
                    Some(Value::Object(merged))
                }
                (Value::Object(_), _) => {
                    return Err(ExecError::exception(
                        "SaltException",
                        "filter_by default and look-up values must both be dictionaries.",
                    ));
                }
                _ => Some(r),
            },
        };
    }
    if truthy(merge) {
        let Value::Object(m) = merge else {
            return Err(ExecError::exception(
                "SaltException",
                "filter_by merge argument must be a dictionary.",
            ));
        };
        ret = match ret.take().filter(|v| !v.is_null()) {
            None => Some(merge.clone()),
            Some(Value::Object(mut r)) => {
                merge_into(&mut r, m, false);
                Some(Value::Object(r))
            }
            Some(_) => {
                return Err(ExecError::InvalidArguments(
                    "Cannot update using non-dict types in dictupdate.update()".into(),
                ));
            }
        };
    }
    Ok(ret.unwrap_or(Value::Null))
}

async fn filter_by(call: Call) -> Result<Value, ExecError> {
    let grains = call.ctx.grains();
    select(
        call.arg("lookup_dict"),
        &python::str(call.arg("grain")),
        &grains,
        call.arg("merge"),
        call.arg("default"),
        call.arg("base"),
    )
}
