//! Slots (`State.format_slots`): an argument written `__slot__:salt:fun(args)` is replaced,
//! just before the state runs, by what the execution function returns; `.key.path` after
//! the call picks into the answer, `~ text` appends to a string answer.

use saltq_exec::{CallContext, PubInfo};
use saltq_semantics::python::str as py_str;
use saltq_semantics::target::traverse;
use serde_json::{Map, Value};

const SLOT: &str = "__slot__:";

/// Python's `shlex` tokens (POSIX, not whitespace-split): words, quoted strings without
/// their quotes, and single punctuation characters; whitespace dropped.
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '\'' || c == '"' {
            chars.next();
            let mut t = String::new();
            while let Some(ch) = chars.next() {
                if ch == c {
                    break;
                }
                if ch == '\\' && chars.peek().is_some_and(|n| *n == c || *n == '\\') {
                    t.extend(chars.next());
                    continue;
                }
                t.push(ch);
            }
            out.push(t);
        } else if c.is_alphanumeric() || c == '_' {
            let mut t = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_alphanumeric() || ch == '_' {
                    t.push(ch);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(t);
        } else {
            out.push(c.to_string());
            chars.next();
        }
    }
    out
}

/// `salt.utils.args.parse_function`: `fun(a, b, k=v)` into its name, arguments and
/// keyword arguments, all strings; `None` when malformed.
pub(crate) fn parse_function(s: &str) -> Option<(String, Vec<String>, Map<String, Value>)> {
    let toks = tokens(s);
    let mut it = toks.into_iter();
    let mut word = Vec::new();
    let mut opened = false;
    for t in it.by_ref() {
        if t == "(" {
            opened = true;
            break;
        }
        word.push(t);
    }
    if word.is_empty() || !opened {
        return None;
    }
    let fname = word.concat();
    let mut word: Vec<String> = Vec::new();
    let mut args = Vec::new();
    let mut kwargs = Map::new();
    let mut brackets: Vec<String> = Vec::new();
    let mut key: Option<String> = None;
    for t in it {
        if ["[", "{", "("].contains(&t.as_str()) {
            brackets.push(t.clone());
            word.push(t);
        } else if (t == "," || t == ")") && brackets.is_empty() {
            if let Some(k) = key.take() {
                kwargs.insert(k, Value::String(word.concat()));
            } else if !word.is_empty() {
                args.push(word.concat());
            }
            if t == ")" {
                return Some((fname, args, kwargs));
            }
            word.clear();
        } else if ["]", "}", ")"].contains(&t.as_str()) {
            let open = brackets.pop()?;
            let want = match open.as_str() {
                "[" => "]",
                "{" => "}",
                _ => ")",
            };
            if t != want {
                return None;
            }
            word.push(t);
        } else if t == "=" && brackets.is_empty() {
            key = Some(word.concat());
            word.clear();
        } else {
            word.push(t);
        }
    }
    None
}

/// `__eval_slot`: one slot's value, or the text unchanged when it is not a valid slot; an
/// error where Salt raises (text after the call that is not a `.path`).
pub(crate) async fn eval_slot(ctx: &CallContext, slot: &str) -> Result<Value, String> {
    let unchanged = || Ok(Value::String(slot.to_owned()));
    let fmt: Vec<&str> = slot.splitn(3, ':').collect();
    if fmt.len() != 3 || fmt[1] != "salt" {
        return unchanged();
    }
    let Some((fun, args, kwargs)) = parse_function(fmt[2]) else {
        return unchanged();
    };
    if saltq_exec::lookup(&fun).is_none() {
        return unchanged();
    }
    let out = saltq_exec::call(
        ctx,
        &fun,
        args.into_iter().map(Value::String).collect(),
        kwargs,
        &PubInfo::default(),
    )
    .await;
    let mut ret = out.ret;
    let slot_text = fmt[2].split('~').next().unwrap_or_default();
    let append: Option<&str> = fmt[2].split_once('~').map(|(_, a)| a);
    if let Some(pos) = slot_text.rfind(')') {
        let rest = &slot_text[pos + 1..];
        if !rest.is_empty() {
            let Some((_, path)) = rest.split_once('.') else {
                return Err("IndexError: list index out of range".into());
            };
            ret = traverse(&ret, path.trim(), ".")
                .cloned()
                .unwrap_or(Value::Null);
        }
    }
    if let (Some(extra), Value::String(s)) = (append, &mut ret) {
        s.push_str(extra.trim());
    }
    Ok(ret)
}

fn is_slot(v: &Value) -> Option<&str> {
    v.as_str().filter(|s| s.starts_with(SLOT))
}

/// `format_slots` over one argument: a string, a dict's values, a list's strings and the
/// values of dicts in a list.
pub(crate) async fn format_value(ctx: &CallContext, v: &mut Value) -> Result<(), String> {
    if let Some(s) = is_slot(v) {
        *v = eval_slot(ctx, s).await?;
        return Ok(());
    }
    match v {
        Value::Object(m) => {
            for value in m.values_mut() {
                if let Some(s) = is_slot(value) {
                    *value = eval_slot(ctx, s).await?;
                }
            }
        }
        Value::Array(l) => {
            for item in l.iter_mut() {
                if let Value::Object(m) = item {
                    for value in m.values_mut() {
                        if let Some(s) = is_slot(value) {
                            *value = eval_slot(ctx, s).await?;
                        }
                    }
                } else if let Some(s) = is_slot(item) {
                    *item = eval_slot(ctx, s).await?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Every slot among a state call's name and arguments, evaluated.
pub(crate) async fn format_call(
    ctx: &CallContext,
    name: &mut String,
    args: &mut Map<String, Value>,
) -> Result<(), String> {
    if name.starts_with(SLOT) {
        *name = py_str(&eval_slot(ctx, name).await?);
    }
    for v in args.values_mut() {
        format_value(ctx, v).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse_function;

    /// Expected values printed by Salt 3007.8's `salt.utils.args.parse_function`.
    #[test]
    fn parse_function_as_salt() {
        let cases = [
            ("test.echo(hello)", json!(["test.echo", ["hello"], {}])),
            (
                "cmd.run('echo hi', cwd=/tmp)",
                json!(["cmd.run", ["echo hi"], {"cwd": "/tmp"}]),
            ),
            (
                "test.arg(a b, [1, 2], k={x: y})",
                json!(["test.arg", ["ab", "[1,2]"], {"k": "{x:y}"}]),
            ),
            ("grains.item(os).os", json!(["grains.item", ["os"], {}])),
            ("bad", json!(null)),
            ("f(a", json!(null)),
            ("f(a]", json!(null)),
            ("x.y()", json!(["x.y", [], {}])),
        ];
        for (input, want) in cases {
            let got = parse_function(input).map(|(f, a, k)| json!([f, a, k]));
            assert_eq!(got.unwrap_or(json!(null)), want, "{input}");
        }
    }
}
