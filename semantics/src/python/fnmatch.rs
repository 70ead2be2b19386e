//! Python's `fnmatch.fnmatch(name, pat)` on POSIX (where it is `fnmatchcase`):
//! shell-style globs matched against a whole string. Arguments go in Python's
//! order, the name first and the pattern second; a hot path compiles the pattern
//! once with [`Glob::new`] and asks [`Glob::is_match`] for each name.
//!
//! `*` matches any run of characters (including `.`, `/` and newlines), `?` one
//! character, `[seq]`/`[!seq]` one character in or out of a set with ranges; an
//! unclosed `[` is a literal. There is no escaping, no `{a,b}`, and case matters.
//! Sets follow `fnmatch.translate` of Python 3.11 to the letter, including the
//! dropping of reversed ranges (`[z-a]` matches nothing, `[!z-a]` anything).

/// One compiled element of a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// `*`: any run of characters.
    Star,
    /// `?`: any one character.
    Any,
    /// A character matched literally.
    Char(char),
    /// `[...]`: one character in (or, negated, out of) a set.
    Set {
        /// True for `[!...]`.
        negated: bool,
        /// Inclusive ranges; a lone character is a range of one.
        ranges: Vec<(char, char)>,
    },
}

impl Token {
    /// Whether this single-character token accepts `c` (`Star` never does).
    fn accepts(&self, c: char) -> bool {
        match self {
            Token::Star => false,
            Token::Any => true,
            Token::Char(l) => *l == c,
            Token::Set { negated, ranges } => {
                ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
            }
        }
    }
}

/// A set Python's `re` would refuse (a reversed range left over after
/// `fnmatch.translate` dropped the ones it could see), so `fnmatch` raises.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad character range in set at offset {offset}")]
pub struct GlobError {
    /// Character offset of the `[` that opens the bad set.
    pub offset: usize,
}

/// A compiled glob, reusable for many ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    /// The pattern as a run of tokens, consecutive stars merged.
    tokens: Vec<Token>,
}

impl Glob {
    /// Compiles `pattern` as Python's `fnmatch.translate` would.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let pat: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < pat.len() {
            let c = pat[i];
            i += 1;
            match c {
                '*' if tokens.last() != Some(&Token::Star) => tokens.push(Token::Star),
                '*' => {}
                '?' => tokens.push(Token::Any),
                '[' => match set_end(&pat, i) {
                    None => tokens.push(Token::Char('[')),
                    Some(j) => {
                        tokens.push(set_token(&pat, i, j).ok_or(GlobError { offset: i - 1 })?);
                        i = j + 1;
                    }
                },
                c => tokens.push(Token::Char(c)),
            }
        }
        Ok(Glob { tokens })
    }

    /// Whether the whole of `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let toks = &self.tokens;
        let (mut p, mut t) = (0, 0);
        // Where the last star was and how much text it has swallowed so far.
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match toks.get(p) {
                Some(Token::Star) => {
                    star = Some((p, t));
                    p += 1;
                }
                Some(tok) if tok.accepts(text[t]) => {
                    p += 1;
                    t += 1;
                }
                _ => match star {
                    Some((sp, st)) => {
                        star = Some((sp, st + 1));
                        p = sp + 1;
                        t = st + 1;
                    }
                    None => return false,
                },
            }
        }
        toks[p..].iter().all(|tok| *tok == Token::Star)
    }
}

/// Python's `fnmatch.fnmatch(name, pat)`, in Python's order: whether the whole of
/// `name` matches the glob `pat`; a pattern Python would reject matches nothing.
pub fn fnmatch(name: &str, pat: &str) -> bool {
    Glob::new(pat).is_ok_and(|g| g.is_match(name))
}

/// Index of the `]` closing a set whose body starts at `i`, as `translate` finds it.
fn set_end(pat: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if pat.get(j) == Some(&'!') {
        j += 1;
    }
    if pat.get(j) == Some(&']') {
        j += 1;
    }
    (j..pat.len()).find(|&k| pat[k] == ']')
}

/// The token for the set body `pat[i..j]`; `None` when Python's `re` would fail.
fn set_token(pat: &[char], i: usize, j: usize) -> Option<Token> {
    // (character, is_range_operator) pairs, as the regex set body translate builds.
    let body: Vec<(char, bool)> = if pat[i..j].contains(&'-') {
        let chunks = merge_reversed(range_chunks(pat, i, j))?;
        let mut body = Vec::new();
        for (n, chunk) in chunks.iter().enumerate() {
            if n > 0 {
                body.push(('-', true));
            }
            body.extend(chunk.iter().map(|c| (*c, false)));
        }
        body
    } else {
        pat[i..j].iter().map(|c| (*c, false)).collect()
    };
    match body.as_slice() {
        [] => Some(Token::Set {
            negated: false,
            ranges: Vec::new(),
        }),
        [('!', false)] => Some(Token::Any),
        [('!', false), rest @ ..] => set_ranges(rest).map(|ranges| Token::Set {
            negated: true,
            ranges,
        }),
        all => set_ranges(all).map(|ranges| Token::Set {
            negated: false,
            ranges,
        }),
    }
}

/// Splits a set body at the hyphens that make ranges, as `translate` does.
fn range_chunks(pat: &[char], mut i: usize, j: usize) -> Vec<Vec<char>> {
    let mut chunks: Vec<Vec<char>> = Vec::new();
    let mut k = if pat[i] == '!' { i + 2 } else { i + 1 };
    while let Some(h) = (k..j).find(|&h| pat[h] == '-') {
        chunks.push(pat[i..h].to_vec());
        i = h + 1;
        k = h + 3;
    }
    if i < j {
        chunks.push(pat[i..j].to_vec());
    } else if let Some(last) = chunks.last_mut() {
        last.push('-');
    }
    chunks
}

/// Drops reversed ranges (`z-a`) by merging their chunks; `None` where
/// Python would index an empty chunk and raise.
fn merge_reversed(mut chunks: Vec<Vec<char>>) -> Option<Vec<Vec<char>>> {
    for k in (1..chunks.len()).rev() {
        let prev_last = *chunks[k - 1].last()?;
        let next_first = *chunks[k].first()?;
        if prev_last > next_first {
            let tail = chunks.remove(k);
            let prev = &mut chunks[k - 1];
            prev.pop();
            prev.extend_from_slice(&tail[1..]);
        }
    }
    Some(chunks)
}

/// Reads a regex set body the way Python's `sre_parse` does; `None` on a reversed range.
fn set_ranges(body: &[(char, bool)]) -> Option<Vec<(char, char)>> {
    let mut ranges = Vec::new();
    let mut n = 0;
    while n < body.len() {
        let lo = body[n].0;
        match (body.get(n + 1), body.get(n + 2)) {
            (Some(('-', true)), Some((hi, _))) => {
                if lo > *hi {
                    return None;
                }
                ranges.push((lo, *hi));
                n += 3;
            }
            _ => {
                ranges.push((lo, lo));
                n += 1;
            }
        }
    }
    Some(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basics() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "web01.example.com", true),
            ("web*", "web01", true),
            ("web*", "Web01", false),
            ("web?", "web1", true),
            ("web?", "web12", false),
            ("*.com", "a/b.com", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("web[12]", "web2", true),
            ("web[!12]", "web2", false),
            ("web[!12]", "web3", true),
            ("web[1-3]", "web3", true),
            ("web[", "web[", true),
            ("[]]", "]", true),
            ("[!]]", "a", true),
            ("[z-a]", "m", false),
            ("[!z-a]", "m", true),
            ("[a-]", "-", true),
            ("{a,b}", "a", false),
            ("\\*", "\\x", true),
            ("*", "line\nbreak", true),
        ];
        for (pat, text, want) in cases {
            assert_eq!(fnmatch(text, pat), *want, "fnmatch({text:?}, {pat:?})");
        }
    }

    /// The cases of the minion's old `fnmatch(name, pattern)`, checked against Python.
    #[test]
    fn minion_cases() {
        let cases = [
            ("test.echo", "test.*", true),
            ("test.echo", "test.e*", true),
            ("test.echo", "t?st.echo", true),
            ("test.echo", "test", false),
            ("web/01", "web*", true),
            ("web1", "web[0-9]", true),
            ("weba", "web[!0-9]", true),
            ("web1", "web[!0-9]", false),
            ("web[", "web[", true),
            ("a]", "[]]]", false),
            ("]]", "[]]]", true),
            ("abcabd", "*abd", true),
            ("", "*", true),
            ("x", "", false),
        ];
        for (name, pat, want) in cases {
            assert_eq!(fnmatch(name, pat), want, "fnmatch({name:?}, {pat:?})");
        }
    }

    /// The cases of the job cache's old `list_jobs` glob, compiled once as it is there.
    #[test]
    fn job_cache_cases() {
        let cases = [
            ("*", "", true),
            ("*", "anything", true),
            ("test.*", "test.ping", true),
            ("test.*", "cmd.run", false),
            ("test.p?ng", "test.ping", true),
            ("test.p?ng", "test.pinng", false),
            ("*.run", "cmd.run", true),
            ("*.run", "cmd.run_all", false),
            ("*run*", "cmd.run_all", true),
            ("web[0-9]", "web5", true),
            ("web[0-9]", "webx", false),
            ("web[!0-9]", "webx", true),
            ("web[!0-9]", "web5", false),
            ("web[]x]", "web]", true),
            ("web[", "web[", true),
            ("web[z-a]", "webm", false),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("a**c", "abc", true),
            ("Test.*", "test.ping", false),
            ("", "", true),
            ("", "x", false),
            ("minion-*", "minion-é", true),
        ];
        for (pat, name, want) in cases {
            let glob = Glob::new(pat).ok();
            assert_eq!(
                glob.is_some_and(|g| g.is_match(name)),
                want,
                "fnmatch({name:?}, {pat:?})"
            );
        }
    }
}
