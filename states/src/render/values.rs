//! Mutable maps and lists for Jinja (`{% do d.update(...) %}`, `l.append(x)`), conversions
//! between JSON data and Jinja values, and Python's `repr` for printed values.
//!
//! minijinja's own maps and lists are immutable; Salt's formulas mutate theirs. Every map and
//! list the render hands to a template (context, `salt[...]` returns, imported data, and
//! `{% set %}` values, which the pre-pass wraps in `__mut`) is one of these objects, shared
//! by reference as Python's are: mutating `pillar.get('web')` changes `pillar.web`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use indexmap::IndexMap;
use minijinja::value::{Enumerator, Object, ObjectRepr, Value as JValue, ValueKind};
use minijinja::{Error, ErrorKind, State};
use saltq_semantics::python;
use serde_json::Value;

/// A Python dict: ordered, mutable, shared.
#[derive(Debug, Default)]
pub struct MutMap(Mutex<IndexMap<JValue, JValue>>);

/// A Python list: mutable, shared.
#[derive(Debug, Default)]
pub struct MutList(Mutex<Vec<JValue>>);

/// A Python tuple: an immutable sequence that prints as `('a', 1)` (the pairs of
/// `dict.items()`, `dictsort` and `zip`).
#[derive(Debug, Default)]
pub struct Tuple(Vec<JValue>);

impl Tuple {
    /// A tuple of these items.
    pub fn from_items(items: Vec<JValue>) -> JValue {
        JValue::from_object(Tuple(items))
    }

    /// The same sequence with each item (a pair from minijinja) made a tuple.
    pub fn pairs_of(value: &JValue) -> Result<JValue, Error> {
        Ok(JValue::from(
            value
                .try_iter()?
                .map(|item| match item.try_iter() {
                    Ok(inner) if item.kind() == ValueKind::Seq => {
                        Tuple::from_items(inner.collect())
                    }
                    _ => item,
                })
                .collect::<Vec<_>>(),
        ))
    }
}

impl Object for Tuple {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        index_of(self.0.len(), key).map(|i| self.0[i].clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.0.clone())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.0.len())
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&jinja_repr(&JValue::from_dyn_object(self.clone())))
    }
}

/// A dict's method looked up as an item (`d['get']`): Jinja falls back from a missing key
/// to the attribute, so the method itself, callable.
#[derive(Debug)]
struct BoundMethod {
    /// The dict.
    target: JValue,
    /// The method's name.
    name: String,
}

impl Object for BoundMethod {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Plain
    }

    fn call(self: &Arc<Self>, state: &State<'_, '_>, args: &[JValue]) -> Result<JValue, Error> {
        self.target.call_method(state, &self.name, args)
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<built-in method {} of dict object>", self.name)
    }
}

/// The methods of a dict that [`MutMap`] answers.
const DICT_METHODS: &[&str] = &[
    "clear",
    "copy",
    "get",
    "items",
    "keys",
    "pop",
    "popitem",
    "setdefault",
    "update",
    "values",
];

impl MutMap {
    fn lock(&self) -> MutexGuard<'_, IndexMap<JValue, JValue>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new map holding these pairs.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (JValue, JValue)>) -> JValue {
        JValue::from_object(MutMap(Mutex::new(pairs.into_iter().collect())))
    }
}

impl MutList {
    fn lock(&self) -> MutexGuard<'_, Vec<JValue>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new list holding these items.
    pub fn from_items(items: Vec<JValue>) -> JValue {
        JValue::from_object(MutList(Mutex::new(items)))
    }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg.into())
}

fn kwargs_of(args: &[JValue]) -> (Vec<JValue>, Vec<(JValue, JValue)>) {
    let mut pos = args.to_vec();
    let mut kw = Vec::new();
    if let Some(last) = pos.last()
        && last.is_kwargs()
    {
        let last = pos.pop().unwrap_or_default();
        if let Ok(keys) = last.try_iter() {
            for k in keys {
                let v = last.get_item(&k).unwrap_or_default();
                kw.push((k, v));
            }
        }
    }
    (pos, kw)
}

/// Items of a map-like or pair-list value (for `update`).
fn pairs_of(value: &JValue) -> Result<Vec<(JValue, JValue)>, Error> {
    if let Some(m) = value.downcast_object_ref::<MutMap>() {
        return Ok(m
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect());
    }
    match value.kind() {
        ValueKind::Map => {
            let mut out = Vec::new();
            for k in value.try_iter()? {
                let v = value.get_item(&k)?;
                out.push((k, v));
            }
            Ok(out)
        }
        ValueKind::None | ValueKind::Undefined => Ok(Vec::new()),
        _ => {
            let mut out = Vec::new();
            for item in value.try_iter()? {
                let k = item.get_item_by_index(0)?;
                let v = item.get_item_by_index(1)?;
                out.push((k, v));
            }
            Ok(out)
        }
    }
}

fn key_error(key: &JValue) -> Error {
    bad(format!("KeyError: {}", jinja_repr(key)))
}

impl Object for MutMap {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        if let Some(v) = self.lock().get(key) {
            return Some(v.clone());
        }
        // `d['get']`: no such key, so Jinja's getitem falls back to the attribute.
        let name = key.as_str().filter(|k| DICT_METHODS.contains(k))?;
        Some(JValue::from_object(BoundMethod {
            target: JValue::from_dyn_object(self.clone()),
            name: name.to_owned(),
        }))
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.lock().keys().cloned().collect())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.lock().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[JValue],
    ) -> Result<JValue, Error> {
        let (pos, kw) = kwargs_of(args);
        match method {
            "get" => {
                let key = pos.first().cloned().unwrap_or_default();
                Ok(self
                    .lock()
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| pos.get(1).cloned().unwrap_or(JValue::from(()))))
            }
            "keys" => Ok(MutList::from_items(self.lock().keys().cloned().collect())),
            "values" => Ok(MutList::from_items(self.lock().values().cloned().collect())),
            "items" => Ok(MutList::from_items(
                self.lock()
                    .iter()
                    .map(|(k, v)| Tuple::from_items(vec![k.clone(), v.clone()]))
                    .collect(),
            )),
            "update" => {
                let mut new = Vec::new();
                for arg in &pos {
                    new.extend(pairs_of(arg)?);
                }
                new.extend(kw);
                let mut map = self.lock();
                for (k, v) in new {
                    map.insert(k, mutify(v));
                }
                Ok(JValue::from(()))
            }
            "setdefault" => {
                let key = pos
                    .first()
                    .cloned()
                    .ok_or_else(|| bad("setdefault expected at least 1 argument, got 0"))?;
                let dflt = mutify(pos.get(1).cloned().unwrap_or(JValue::from(())));
                Ok(self.lock().entry(key).or_insert(dflt).clone())
            }
            "pop" => {
                let key = pos
                    .first()
                    .cloned()
                    .ok_or_else(|| bad("pop expected at least 1 argument, got 0"))?;
                match self.lock().shift_remove(&key) {
                    Some(v) => Ok(v),
                    None => pos.get(1).cloned().ok_or_else(|| key_error(&key)),
                }
            }
            "popitem" => {
                let popped = self.lock().pop();
                popped
                    .map(|(k, v)| Tuple::from_items(vec![k, v]))
                    .ok_or_else(|| bad("KeyError: 'popitem(): dictionary is empty'"))
            }
            "clear" => {
                self.lock().clear();
                Ok(JValue::from(()))
            }
            "copy" => Ok(MutMap::from_pairs(
                self.lock().iter().map(|(k, v)| (k.clone(), v.clone())),
            )),
            "has_key" | "__contains__" => Ok(JValue::from(
                pos.first().is_some_and(|k| self.lock().contains_key(k)),
            )),
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&jinja_repr(&JValue::from_dyn_object(self.clone())))
    }
}

fn index_of(len: usize, idx: &JValue) -> Option<usize> {
    let i = i64::try_from(idx.clone()).ok()?;
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { len + i } else { i };
    (0..len)
        .contains(&i)
        .then(|| usize::try_from(i).ok())
        .flatten()
}

impl Object for MutList {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &JValue) -> Option<JValue> {
        let list = self.lock();
        index_of(list.len(), key).map(|i| list[i].clone())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.lock().clone())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.lock().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[JValue],
    ) -> Result<JValue, Error> {
        let (pos, _) = kwargs_of(args);
        let arg = |i: usize| {
            pos.get(i)
                .cloned()
                .ok_or_else(|| bad(format!("{method}() takes exactly one argument (0 given)")))
        };
        match method {
            "append" => {
                let v = mutify(arg(0)?);
                self.lock().push(v);
                Ok(JValue::from(()))
            }
            "extend" => {
                let items: Vec<JValue> = arg(0)?.try_iter()?.map(mutify).collect();
                self.lock().extend(items);
                Ok(JValue::from(()))
            }
            "insert" => {
                let idx = i64::try_from(arg(0)?)?;
                let v = mutify(arg(1)?);
                let mut list = self.lock();
                let len = i64::try_from(list.len()).unwrap_or(i64::MAX);
                let at = if idx < 0 {
                    (len + idx).max(0)
                } else {
                    idx.min(len)
                };
                list.insert(usize::try_from(at).unwrap_or(0), v);
                Ok(JValue::from(()))
            }
            "remove" => {
                let v = arg(0)?;
                let mut list = self.lock();
                match list.iter().position(|x| x == &v) {
                    Some(i) => {
                        list.remove(i);
                        Ok(JValue::from(()))
                    }
                    None => Err(bad("ValueError: list.remove(x): x not in list")),
                }
            }
            "pop" => {
                let mut list = self.lock();
                if list.is_empty() {
                    return Err(bad("IndexError: pop from empty list"));
                }
                let i = match pos.first() {
                    Some(idx) => index_of(list.len(), idx)
                        .ok_or_else(|| bad("IndexError: pop index out of range"))?,
                    None => list.len() - 1,
                };
                Ok(list.remove(i))
            }
            "index" => {
                let v = arg(0)?;
                self.lock()
                    .iter()
                    .position(|x| x == &v)
                    .map(JValue::from)
                    .ok_or_else(|| bad(format!("ValueError: {} is not in list", jinja_repr(&v))))
            }
            "count" => {
                let v = arg(0)?;
                Ok(JValue::from(
                    self.lock().iter().filter(|x| *x == &v).count(),
                ))
            }
            "reverse" => {
                self.lock().reverse();
                Ok(JValue::from(()))
            }
            "sort" => {
                self.lock().sort();
                Ok(JValue::from(()))
            }
            "clear" => {
                self.lock().clear();
                Ok(JValue::from(()))
            }
            "copy" => Ok(MutList::from_items(self.lock().clone())),
            _ => Err(Error::from(ErrorKind::UnknownMethod)),
        }
    }

    fn render(self: &Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&jinja_repr(&JValue::from_dyn_object(self.clone())))
    }
}

/// Writes an execution function's answer back into the dict it was given, as Salt's
/// in-place functions (`defaults.merge`, `defaults.update`) change the caller's dict:
/// `deep` merges into nested dicts that are dicts on both sides (keeping them the same
/// objects), otherwise each key's value is replaced; keys the answer lacks are removed.
pub fn write_back(target: &JValue, answer: &Value, deep: bool) {
    let (Some(map), Value::Object(new)) = (target.downcast_object_ref::<MutMap>(), answer) else {
        return;
    };
    let mut nested = Vec::new();
    {
        let mut m = map.lock();
        m.retain(|k, _| k.as_str().is_some_and(|k| new.contains_key(k)));
        for (k, v) in new {
            let key = JValue::from(k.as_str());
            match m.get(&key) {
                Some(old)
                    if deep && v.is_object() && old.downcast_object_ref::<MutMap>().is_some() =>
                {
                    nested.push((old.clone(), v));
                }
                _ => {
                    m.insert(key, to_jinja(v));
                }
            }
        }
    }
    for (old, v) in nested {
        write_back(&old, v, deep);
    }
}

/// JSON data as a Jinja value: maps and lists become mutable objects.
pub fn to_jinja(value: &Value) -> JValue {
    match value {
        Value::Null => JValue::from(()),
        Value::Bool(b) => JValue::from(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                JValue::from(i)
            } else if let Some(u) = n.as_u64() {
                JValue::from(u)
            } else {
                JValue::from(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => JValue::from(s.as_str()),
        Value::Array(items) => MutList::from_items(items.iter().map(to_jinja).collect()),
        Value::Object(map) => MutMap::from_pairs(
            map.iter()
                .map(|(k, v)| (JValue::from(k.as_str()), to_jinja(v))),
        ),
    }
}

/// A Jinja value made mutable: minijinja's own maps and lists are copied (deeply) into
/// [`MutMap`]/[`MutList`]; ours are kept as they are (shared).
pub fn mutify(value: JValue) -> JValue {
    if let Some(map) = value.downcast_object_ref::<IndexMap<JValue, JValue>>() {
        return MutMap::from_pairs(map.iter().map(|(k, v)| (k.clone(), mutify(v.clone()))));
    }
    if let Some(list) = value.downcast_object_ref::<Vec<JValue>>() {
        return MutList::from_items(list.iter().cloned().map(mutify).collect());
    }
    value
}

/// A Jinja value as JSON data (undefined is `null`).
pub fn to_json(value: &JValue) -> Value {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Value::Null,
        ValueKind::Bool => Value::Bool(value.is_true()),
        ValueKind::Number => serde_json::to_value(value).unwrap_or(Value::Null),
        ValueKind::String => Value::String(value.as_str().unwrap_or_default().to_string()),
        ValueKind::Map => {
            let mut map = serde_json::Map::new();
            if let Ok(pairs) = pairs_of(value) {
                for (k, v) in pairs {
                    map.insert(key_text(&k), to_json(&v));
                }
            }
            Value::Object(map)
        }
        ValueKind::Seq | ValueKind::Iterable => Value::Array(
            value
                .try_iter()
                .map(|it| it.map(|v| to_json(&v)).collect())
                .unwrap_or_default(),
        ),
        _ => Value::String(value.to_string()),
    }
}

/// A key as JSON writes Python keys: strings as they are, others by their JSON text.
fn key_text(key: &JValue) -> String {
    match key.as_str() {
        Some(s) => s.to_string(),
        None => match to_json(key) {
            Value::String(s) => s,
            other => other.to_string(),
        },
    }
}

/// Python's `repr()` of a Jinja value, as `{{ d }}` prints a dict or a list. Only the walk
/// over Jinja's maps and lists (whose keys need not be strings) is here; every string and
/// number is spelled by `saltq_semantics::python` (`'\\x85'`, `1e-05`).
pub fn jinja_repr(value: &JValue) -> String {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => "None".into(),
        ValueKind::Bool => if value.is_true() { "True" } else { "False" }.into(),
        ValueKind::String => python::str_repr(value.as_str().unwrap_or_default()),
        ValueKind::Number if value.is_integer() => value.to_string(),
        ValueKind::Number => match f64::try_from(value.clone()) {
            Ok(f) => python::float_repr(f),
            Err(_) => value.to_string(),
        },
        ValueKind::Map => {
            let inner: Vec<String> = pairs_of(value)
                .unwrap_or_default()
                .iter()
                .map(|(k, v)| format!("{}: {}", jinja_repr(k), jinja_repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        ValueKind::Seq => {
            let inner: Vec<String> = value
                .try_iter()
                .map(|it| it.map(|v| jinja_repr(&v)).collect())
                .unwrap_or_default();
            if value.downcast_object_ref::<Tuple>().is_some() {
                let comma = if inner.len() == 1 { "," } else { "" };
                format!("({}{comma})", inner.join(", "))
            } else {
                format!("[{}]", inner.join(", "))
            }
        }
        _ => value.to_string(),
    }
}

/// `pprint.pformat()` of a Jinja value (the `python` filter): `saltq_semantics::python::pformat`
/// of its data, so long values wrap at 80 columns as Python's do.
pub fn jinja_pformat(value: &JValue) -> String {
    python::pformat(&to_json(value))
}

/// How `{{ value }}` prints, as Python's `str()`: strings as they are, `None`, `True`,
/// dicts and lists by `repr`.
pub fn py_str(value: &JValue) -> String {
    match value.kind() {
        ValueKind::String => value.as_str().unwrap_or_default().to_string(),
        ValueKind::Undefined => String::new(),
        ValueKind::Plain => value.to_string(),
        _ => jinja_repr(value),
    }
}
