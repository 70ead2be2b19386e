//! Python's `difflib.unified_diff`, which Salt uses to show file changes
//! (`salt.utils.stringutils.get_diff`): the same matching (`SequenceMatcher`, with its
//! "popular element" heuristic), the same hunks and the same header lines, so that a diff
//! reads exactly as Salt's.

use std::collections::HashMap;

/// A `(tag, i1, i2, j1, j2)` opcode: `a[i1..i2]` becomes `b[j1..j2]`.
type Opcode = (Tag, usize, usize, usize, usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

/// `SequenceMatcher(None, a, b)` over lines.
struct Matcher<'a> {
    a: &'a [&'a str],
    b: &'a [&'a str],
    b2j: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Matcher<'a> {
    fn new(a: &'a [&'a str], b: &'a [&'a str]) -> Self {
        let mut b2j: HashMap<&str, Vec<usize>> = HashMap::new();
        for (j, line) in b.iter().enumerate() {
            b2j.entry(line).or_default().push(j);
        }
        // autojunk: in sequences of 200 or more, drop elements seen more than 1% of the time.
        if b.len() >= 200 {
            let ntest = b.len() / 100 + 1;
            b2j.retain(|_, js| js.len() <= ntest);
        }
        Self { a, b, b2j }
    }

    /// `find_longest_match(alo, ahi, blo, bhi)` without junk extension beyond popular items.
    fn longest(&self, alo: usize, ahi: usize, blo: usize, bhi: usize) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
        let mut j2len: HashMap<usize, usize> = HashMap::new();
        for i in alo..ahi {
            let mut newj2len = HashMap::new();
            if let Some(js) = self.b2j.get(self.a[i]) {
                for &j in js {
                    if j < blo {
                        continue;
                    }
                    if j >= bhi {
                        break;
                    }
                    let k = j
                        .checked_sub(1)
                        .and_then(|p| j2len.get(&p))
                        .copied()
                        .unwrap_or(0)
                        + 1;
                    newj2len.insert(j, k);
                    if k > bestsize {
                        (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
                    }
                }
            }
            j2len = newj2len;
        }
        // Extend with equal elements that were dropped as popular, on both sides.
        while besti > alo && bestj > blo && self.a[besti - 1] == self.b[bestj - 1] {
            (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && self.a[besti + bestsize] == self.b[bestj + bestsize]
        {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }

    fn matching_blocks(&self) -> Vec<(usize, usize, usize)> {
        let mut queue = vec![(0, self.a.len(), 0, self.b.len())];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.longest(alo, ahi, blo, bhi);
            if k > 0 {
                blocks.push((i, j, k));
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        blocks.sort_unstable();
        // Collapse adjacent blocks.
        let mut merged: Vec<(usize, usize, usize)> = Vec::new();
        for (i, j, k) in blocks {
            match merged.last_mut() {
                Some((i1, j1, k1)) if *i1 + *k1 == i && *j1 + *k1 == j => *k1 += k,
                _ => merged.push((i, j, k)),
            }
        }
        merged.push((self.a.len(), self.b.len(), 0));
        merged
    }

    fn opcodes(&self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        for (ai, bj, size) in self.matching_blocks() {
            let tag = match (i < ai, j < bj) {
                (true, true) => Some(Tag::Replace),
                (true, false) => Some(Tag::Delete),
                (false, true) => Some(Tag::Insert),
                (false, false) => None,
            };
            if let Some(tag) = tag {
                out.push((tag, i, ai, j, bj));
            }
            (i, j) = (ai + size, bj + size);
            if size > 0 {
                out.push((Tag::Equal, ai, i, bj, j));
            }
        }
        out
    }
}

/// `get_grouped_opcodes(n)`: hunks with `n` lines of context.
fn grouped(mut codes: Vec<Opcode>, n: usize) -> Vec<Vec<Opcode>> {
    if codes.is_empty() {
        codes.push((Tag::Equal, 0, 1, 0, 1));
    }
    if let Some(first) = codes.first_mut()
        && first.0 == Tag::Equal
    {
        let (t, i1, i2, j1, j2) = *first;
        *first = (
            t,
            i1.max(i2.saturating_sub(n)),
            i2,
            j1.max(j2.saturating_sub(n)),
            j2,
        );
    }
    if let Some(last) = codes.last_mut()
        && last.0 == Tag::Equal
    {
        let (t, i1, i2, j1, j2) = *last;
        *last = (t, i1, i2.min(i1 + n), j1, j2.min(j1 + n));
    }
    let nn = n + n;
    let mut groups = Vec::new();
    let mut group = Vec::new();
    for (tag, i1, i2, j1, j2) in codes {
        let (mut i1, mut j1) = (i1, j1);
        if tag == Tag::Equal && i2 - i1 > nn {
            group.push((tag, i1, i2.min(i1 + n), j1, j2.min(j1 + n)));
            groups.push(std::mem::take(&mut group));
            (i1, j1) = (i1.max(i2.saturating_sub(n)), j1.max(j2.saturating_sub(n)));
        }
        group.push((tag, i1, i2, j1, j2));
    }
    let only_equal = group.len() == 1 && group[0].0 == Tag::Equal;
    if !group.is_empty() && !only_equal {
        groups.push(group);
    }
    groups
}

/// `_format_range_unified`.
fn range(start: usize, stop: usize) -> String {
    let length = stop - start;
    match length {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{length}", start + 1),
    }
}

/// `"".join(difflib.unified_diff(a, b))` for lines that keep their line endings (Python's
/// `splitlines(True)`); empty when the two are equal.
pub fn unified_diff(a: &[&str], b: &[&str]) -> String {
    unified_diff_lines(a, b).concat()
}

/// The items `difflib.unified_diff(a, b)` yields: the `--- `/`+++ ` headers and hunk ranges
/// end with `\n`; each text line is its prefix and the line as given.
pub fn unified_diff_lines(a: &[&str], b: &[&str]) -> Vec<String> {
    let m = Matcher::new(a, b);
    let mut out = Vec::new();
    for group in grouped(m.opcodes(), 3) {
        if out.is_empty() {
            out.push("--- \n".to_owned());
            out.push("+++ \n".to_owned());
        }
        let (first, last) = (group[0], group[group.len() - 1]);
        out.push(format!(
            "@@ -{} +{} @@\n",
            range(first.1, last.2),
            range(first.3, last.4)
        ));
        for (tag, i1, i2, j1, j2) in group {
            if tag == Tag::Equal {
                out.extend(a[i1..i2].iter().map(|l| format!(" {l}")));
                continue;
            }
            if matches!(tag, Tag::Replace | Tag::Delete) {
                out.extend(a[i1..i2].iter().map(|l| format!("-{l}")));
            }
            if matches!(tag, Tag::Replace | Tag::Insert) {
                out.extend(b[j1..j2].iter().map(|l| format!("+{l}")));
            }
        }
    }
    out
}

/// Python's `str.splitlines(True)` for `\n`, `\r\n` and `\r` line ends.
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\n' => i + 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => i + 2,
            b'\r' => i + 1,
            _ => {
                i += 1;
                continue;
            }
        };
        out.push(&text[start..end]);
        start = end;
        i = end;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(a: &str, b: &str) -> String {
        unified_diff(&split_lines(a), &split_lines(b))
    }

    #[test]
    fn matches_python() {
        // Each expected text from Python 3.11's "".join(difflib.unified_diff(...)).
        let ten = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        assert_eq!(
            diff(ten, &ten.replace("b\n", "B\n")),
            "--- \n+++ \n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n"
        );
        assert_eq!(diff(ten, ten), "");
        assert_eq!(
            diff(ten, &ten.replace("b\n", "B\n").replace("i\n", "I\n")),
            "--- \n+++ \n@@ -1,10 +1,10 @@\n a\n-b\n+B\n c\n d\n e\n f\n g\n h\n-i\n+I\n j\n"
        );
        let long: String = (0..20).map(|i| format!("{i}\n")).collect();
        let changed = long.replace("2\n", "two\n").replace("17\n", "seventeen\n");
        assert_eq!(
            diff(&long, &changed),
            "--- \n+++ \n@@ -1,6 +1,6 @@\n 0\n 1\n-2\n+two\n 3\n 4\n 5\n@@ -10,11 +10,11 @@\n 9\n 10\n 11\n-12\n+1two\n 13\n 14\n 15\n 16\n-17\n+seventeen\n 18\n 19\n"
        );
        let big: String = (0..250).map(|i| format!("line {i}\n")).collect();
        assert_eq!(
            diff(&big, &big.replace("line 100\n", "changed\n")),
            "--- \n+++ \n@@ -98,7 +98,7 @@\n line 97\n line 98\n line 99\n-line 100\n+changed\n line 101\n line 102\n line 103\n"
        );
        // 300 lines of five values: every value is "popular" and dropped from matching, as
        // Python's autojunk does; the diff's length and digest are Python's.
        let popular: String = (0..300).map(|i| format!("{}\n", i % 5)).collect();
        let got = diff(&popular, &popular.replacen("3\n4\n0", "X\n4\n0", 1));
        assert_eq!(got.len(), 1821);
        assert_eq!(
            crate::hashing::hex_digest("sha256", got.as_bytes())
                .ok()
                .as_deref(),
            Some("4906a60c1065b7e5b15460cc568ce5a8793e5f4fb8b49eb3101b6b7bd621022a")
        );
        assert_eq!(diff("", "x\n"), "--- \n+++ \n@@ -0,0 +1 @@\n+x\n");
        assert_eq!(
            diff("a\nb", "a\nb\nc\n"),
            "--- \n+++ \n@@ -1,2 +1,3 @@\n a\n-b+b\n+c\n"
        );
    }

    #[test]
    fn lines_keep_their_ends() {
        assert_eq!(split_lines("a\nb\r\nc\rd"), ["a\n", "b\r\n", "c\r", "d"]);
        assert!(split_lines("").is_empty());
    }
}
