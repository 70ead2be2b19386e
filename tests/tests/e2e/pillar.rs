//! Pillar compiled as Salt's (issue #33), end to end through a real master and minions:
//! Jinja pillar with `include:` (`defaults:`, `key:`) read by a minion's `state.apply`,
//! `I@` targeting on the rendered pillar, `saltutil.refresh_pillar` picking a change up, a
//! broken SLS beside good ones (Salt's `_errors`, the others kept), and the `pillar.example`
//! of every public formula in `../shared/third-party/formulas` compared with what Salt
//! 3007.8 compiles from it (recorded with `states/src/pillar/testdata/record.sh`, one SLS
//! `example` listed for `'*'`, into `data/pillar_formulas/<formula>.json`).

use std::path::Path;
use std::time::Duration;

use saltq_tests::{Master, bin, eventually, third_party};
use serde_json::{Value, json};

/// `saltq -L <on> <args...>`: the minion's return.
fn call(master: &Master, on: &str, args: &[&str]) -> Value {
    let mut argv = vec!["-L", on];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["--out", "json", "--static", "-t", "20"]);
    let o = master.saltq(&argv);
    o.json()[on].clone()
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn refresh(master: &Master, on: &str) {
    let r = call(master, on, &["saltutil.refresh_pillar", "wait=True"]);
    assert_eq!(r, json!(true), "refresh_pillar on {on}");
}

#[test]
fn jinja_pillar_with_includes_reaches_states_targeting_and_refresh() {
    let master = Master::start_with(|dir| {
        let pillar = dir.join("pillar");
        write(
            &pillar,
            "top.sls",
            "base:\n  '*':\n    - common\n  'pil-web*':\n    - web\n",
        );
        write(
            &pillar,
            "common.sls",
            "include:\n  - lib:\n      defaults: {port: 8080}\n      key: svc\nrole: {{ grains['id'] }}\n",
        );
        write(
            &pillar,
            "lib.sls",
            "port: {{ port }}\nname: lib-{{ sls }}\n",
        );
        write(
            &pillar,
            "web.sls",
            "{% set kinds = ['front', 'api'] %}\nweb:\n{%- for k in kinds %}\n  {{ k }}: {{ loop.index }}\n{%- endfor %}\n",
        );
        let tree = dir.join("tree");
        write(
            &tree,
            "out.sls",
            "out:\n  file.managed:\n    - name: {{ pillar['out'] }}\n    - contents: \"{{ pillar['svc']['port'] }} {{ pillar['svc']['name'] }} {{ pillar['web']['api'] }}\"\n",
        );
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\nfile_roots:\n  base:\n    - {}\n",
            pillar.display(),
            tree.display()
        )
    });
    let pillar_dir = master.dir.0.join("pillar");
    let _web = master.minion("pil-web1", "");
    let _db = master.minion("pil-db1", "");
    master.wait_for("pil-web1");
    master.wait_for("pil-db1");

    let items = call(&master, "pil-web1", &["pillar.items"]);
    let items_web = items.clone();
    assert_eq!(
        items,
        json!({
            "svc": {"port": 8080, "name": "lib-lib"},
            "role": "pil-web1",
            "web": {"front": 1, "api": 2},
        }),
        "file order kept, include under its key"
    );
    // A state reads the included, rendered pillar.
    let out = master.dir.0.join("out.txt");
    let out_s = out.display().to_string();
    let r = call(
        &master,
        "pil-web1",
        &[
            "state.apply",
            "out",
            &format!("pillar={{\"out\": \"{out_s}\"}}"),
        ],
    );
    assert!(r.is_object(), "{r}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "8080 lib-lib 2\n");

    // I@ on the rendered pillar: the master's view and each minion's.
    let o = master.saltq(&["-I", "web:api:2", "test.ping", "--out", "json", "--static"]);
    assert_eq!(o.json(), json!({"pil-web1": true}), "{o:?}");
    let o = master.saltq(&[
        "-C",
        "I@role:pil-db*",
        "test.ping",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(o.json(), json!({"pil-db1": true}), "{o:?}");
    // J@, a regular expression on the rendered pillar (Salt's pillar_pcre).
    let o = master.saltq(&[
        "-C",
        "J@role:^pil-w.b[0-9]$",
        "test.ping",
        "--out",
        "json",
        "--static",
    ]);
    assert_eq!(o.json(), json!({"pil-web1": true}), "{o:?}");

    // The pillar runners compile on the master from the minion's cached grains.
    let o = master.saltq(&["run", "pillar.show_top", "minion=pil-db1", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(
        o.json(),
        json!({"base": {"*": ["common"], "pil-web*": ["web"]}}),
        "every target of the top, not only those matching the minion"
    );
    let o = master.saltq(&["run", "pillar.show_pillar", "pil-web1", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.json(), items_web, "show_pillar is the minion's pillar");

    // A change is picked up by refresh_pillar.
    write(
        &pillar_dir,
        "lib.sls",
        "port: {{ port + 1 }}\nname: changed\n",
    );
    refresh(&master, "pil-db1");
    assert_eq!(
        call(&master, "pil-db1", &["pillar.get", "svc"]),
        json!({"port": 8081, "name": "changed"})
    );

    // A broken SLS beside good ones: Salt's `_errors`, the good files kept.
    write(
        &pillar_dir,
        "top.sls",
        "base:\n  '*':\n    - common\n    - broken\n    - missing\n",
    );
    write(&pillar_dir, "broken.sls", "bad: {{ nope.x }}\n");
    refresh(&master, "pil-db1");
    let items = eventually("the new pillar", Duration::from_secs(20), || {
        let v = call(&master, "pil-db1", &["pillar.items"]);
        v.get("_errors").is_some().then_some(v)
    });
    assert_eq!(
        items,
        json!({
            "svc": {"port": 8081, "name": "changed"},
            "role": "pil-db1",
            "_errors": [
                "Rendering SLS 'broken' failed. Please see master log for details.",
                "Specified SLS 'missing' in environment 'base' is not available on the salt master",
            ],
        })
    );
    // Everyone else is still served.
    assert_eq!(call(&master, "pil-web1", &["test.ping"]), json!(true));
}

#[test]
fn formula_pillar_examples_compile_as_salt() {
    let formulas = third_party("formulas");
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/data/pillar_formulas");
    let master = Master::start_with(|dir| {
        let pillar = dir.join("pillar");
        write(&pillar, "top.sls", "base:\n  '*':\n    - example\n");
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\n",
            pillar.display()
        )
    });
    let pillar_dir = master.dir.0.join("pillar");
    // Salt's recording ran as minion `web1` with `os_family: Debian`; `init` as Salt
    // detects it in a container.
    let _m = master.minion("web1", "grains:\n  os_family: Debian\n  init: unknown\n");
    master.wait_for("web1");
    let mut names: Vec<_> = std::fs::read_dir(&expected)
        .unwrap()
        .flatten()
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".json")
                .to_owned()
        })
        .collect();
    names.sort();
    let mut compared = 0;
    for name in names {
        // postgres' example puts the current time in its pillar (status.time), prometheus'
        // a random number (`| random`, a filter saltq's Jinja lacks as yet).
        // vim's has `&colorcolumn: ...`, an anchored empty (null) key, which saltq's YAML
        // loader reads as a plain value as yet: a known difference, skipped here.
        if name == "postgres" || name == "prometheus" || name == "vim" {
            continue;
        }
        let example = std::fs::read_to_string(formulas.join(&name).join("pillar.example")).unwrap();
        write(&pillar_dir, "example.sls", &example);
        refresh(&master, "web1");
        let want: Value = serde_json::from_str(
            &std::fs::read_to_string(expected.join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        let got = call(&master, "web1", &["pillar.items"]);
        // Values here: the CLI gets the return through a protobuf Struct, which sorts its
        // keys; the order the minion holds is checked by `pillar_keeps_file_order_...`.
        assert_eq!(got, want, "formula {name}");
        compared += 1;
    }
    assert!(compared >= 22, "only {compared} formulas compared");
}

/// The keys of a JSON object, in order.
fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// Pillar keeps the order of its files on the way to the minion (a protobuf `Struct` would
/// sort it): `salt['pillar.items']()` and a Jinja loop over `pillar` in a state render on the
/// minion see file order. The master's nodegroups reach the minion's state runs, as Salt's
/// `master_opts`: a state top's `match: nodegroup` and `N@` in a compound select by them.
#[test]
fn pillar_keeps_file_order_on_the_minion_and_nodegroups_reach_state_tops() {
    let master = Master::start_with(|dir| {
        let pillar = dir.join("pillar");
        write(&pillar, "top.sls", "base:\n  '*':\n    - ordered\n");
        write(
            &pillar,
            "ordered.sls",
            "zeta: 1\nalpha:\n  yy: 1\n  bb: 2\n  mm: 3\nmid: 3\nbeta: [b, a]\n",
        );
        let tree = dir.join("tree");
        write(
            &tree,
            "top.sls",
            "base:\n  webs:\n    - match: nodegroup\n    - loop\n  'N@webs and G@id:ord-web1':\n    - match: compound\n    - compound\n",
        );
        let out = dir.join("out");
        write(
            &tree,
            "loop.sls",
            &format!(
                "keys:\n  file.managed:\n    - name: {out}/keys-{{{{ grains['id'] }}}}.txt\n    - contents: \"{{% for k in pillar %}}{{{{ k }}}},{{% endfor %}} {{% for k, v in pillar['alpha'].items() %}}{{{{ k }}}}={{{{ v }}}},{{% endfor %}}\"\nitems:\n  file.managed:\n    - name: {out}/items-{{{{ grains['id'] }}}}.json\n    - contents: {{{{ salt['pillar.items']() | tojson | yaml_dquote }}}}\n{{% for k in pillar %}}\nloop-{{{{ k }}}}:\n  test.succeed_without_changes: []\n{{% endfor %}}\n",
                out = out.display()
            ),
        );
        write(
            &tree,
            "compound.sls",
            &format!(
                "compound:\n  file.managed:\n    - name: {out}/compound-{{{{ grains['id'] }}}}.txt\n    - contents: N@\n",
                out = out.display()
            ),
        );
        std::fs::create_dir_all(&out).unwrap();
        format!(
            "auto_accept: true\nnodegroups:\n  webs: 'L@ord-web1,ord-web2'\npillar_roots:\n  base:\n    - {}\nfile_roots:\n  base:\n    - {}\n",
            pillar.display(),
            tree.display()
        )
    });
    let out = master.dir.0.join("out");
    let web = master.minion("ord-web1", "");
    let _db = master.minion("ord-db1", "");
    master.wait_for("ord-web1");
    master.wait_for("ord-db1");

    let r = call(&master, "ord-web1", &["state.apply"]);
    assert!(r.is_object(), "{r}");
    let keys_txt = std::fs::read_to_string(out.join("keys-ord-web1.txt")).unwrap();
    assert_eq!(
        keys_txt, "zeta,alpha,mid,beta, yy=1,bb=2,mm=3,\n",
        "a Jinja loop over pillar"
    );
    let items: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("items-ord-web1.json")).unwrap())
            .unwrap();
    assert_eq!(
        keys(&items),
        ["zeta", "alpha", "mid", "beta"],
        "pillar.items: {items}"
    );
    assert_eq!(keys(&items["alpha"]), ["yy", "bb", "mm"], "nested: {items}");
    assert_eq!(items["beta"], json!(["b", "a"]));
    // The states a loop over pillar makes run in file order (their __run_num__).
    let mut runs: Vec<(i64, String)> = r
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.contains("_|-loop-"))
        .map(|(k, v)| (v["__run_num__"].as_i64().unwrap(), k.clone()))
        .collect();
    runs.sort();
    let order: Vec<&str> = runs
        .iter()
        .map(|(_, k)| k.split("_|-").nth(1).unwrap())
        .collect();
    assert_eq!(
        order,
        ["loop-zeta", "loop-alpha", "loop-mid", "loop-beta"],
        "{r}"
    );
    // salt-call through the master: the pillar the master compiled, printed where it
    // arrives, in file order.
    let o = std::process::Command::new(bin("saltq-minion"))
        .arg("-c")
        .arg(web.dir.0.join("etc"))
        .args(["call", "pillar.items", "--out", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(keys(&v["local"]), ["zeta", "alpha", "mid", "beta"], "{v}");
    assert_eq!(keys(&v["local"]["alpha"]), ["yy", "bb", "mm"], "{v}");
    // match: nodegroup and N@ in a compound, by the master's nodegroups.
    assert_eq!(
        std::fs::read_to_string(out.join("compound-ord-web1.txt")).unwrap(),
        "N@\n"
    );
    // saltq-minion call through the master gets the nodegroups with its pillar, as salt-call
    // does: the same top entries select its run.
    std::fs::remove_file(out.join("compound-ord-web1.txt")).unwrap();
    std::fs::remove_file(out.join("keys-ord-web1.txt")).unwrap();
    let o = std::process::Command::new(bin("saltq-minion"))
        .arg("-c")
        .arg(web.dir.0.join("etc"))
        .args(["call", "state.apply", "--out", "json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(
        std::fs::read_to_string(out.join("compound-ord-web1.txt")).unwrap(),
        "N@\n",
        "{o:?}"
    );
    assert!(out.join("keys-ord-web1.txt").exists(), "{o:?}");

    // A minion outside the nodegroup: neither top entry is its.
    let r = call(&master, "ord-db1", &["state.apply"]);
    assert_eq!(
        r["no_|-states_|-states_|-None"]["comment"],
        json!("No Top file or master_tops data matches found. Please see master log for details."),
        "{r}"
    );
    assert!(!out.join("keys-ord-db1.txt").exists());
    assert!(!out.join("compound-ord-db1.txt").exists());
    // `pillar.items` through the master still carries every value.
    assert_eq!(
        call(&master, "ord-db1", &["pillar.items"]),
        json!({"zeta": 1, "alpha": {"yy": 1, "bb": 2, "mm": 3}, "mid": 3, "beta": ["b", "a"]})
    );
}

/// A pillar refresh that fails (here: the pillar grew past the minion's `max_message_size`,
/// so the master's answer cannot be taken) keeps the pillar the minion had, as Salt's minion
/// does, but never silently: the minion's log says so in Salt's words and `pillar.items`
/// carries the failure in `_errors` (so state runs refuse it, as any pillar error) until a
/// refresh succeeds. `refresh_pillar wait=True` answers `True` as Salt's, once the refresh
/// ended.
#[test]
fn a_failed_pillar_refresh_is_logged_and_in_errors_until_one_succeeds() {
    let master = Master::start_with(|dir| {
        let pillar = dir.join("pillar");
        write(&pillar, "top.sls", "base:\n  '*':\n    - data\n");
        write(&pillar, "data.sls", "small: 1\n");
        format!(
            "auto_accept: true\npillar_roots:\n  base:\n    - {}\n",
            pillar.display()
        )
    });
    let pillar_dir = master.dir.0.join("pillar");
    let m = master.minion("pil-stale1", "max_message_size: 1048576\n");
    master.wait_for("pil-stale1");
    assert_eq!(
        call(&master, "pil-stale1", &["pillar.items"]),
        json!({"small": 1})
    );

    // The master now compiles a pillar of 2 MB: its answer is past the minion's limit.
    write(
        &pillar_dir,
        "data.sls",
        &format!("small: 2\nbig: {}\n", "x".repeat(2 * 1024 * 1024)),
    );
    refresh(&master, "pil-stale1");
    let items = call(&master, "pil-stale1", &["pillar.items"]);
    assert_eq!(
        items["small"],
        json!(1),
        "the pillar from before is kept: {items}"
    );
    let errors = items["_errors"]
        .as_array()
        .unwrap_or_else(|| panic!("no _errors: {items}"));
    assert_eq!(errors.len(), 1, "{items}");
    let e = errors[0].as_str().unwrap();
    assert!(e.starts_with("Pillar data could not be refreshed: "), "{e}");
    assert!(
        e.ends_with("this is the pillar from before the refresh. One or more masters may be down!"),
        "{e}"
    );
    let log = std::fs::read_to_string(m.log()).unwrap();
    assert!(
        log.contains("Pillar data could not be refreshed: ")
            && log.contains("keeping the pillar from before"),
        "the minion's log says so"
    );
    // A state run refuses the pillar with its errors, as Salt's.
    let r = call(&master, "pil-stale1", &["state.apply"]);
    assert_eq!(
        r[0],
        json!("Pillar failed to render with the following messages:"),
        "{r}"
    );
    // A second failure replaces the entry rather than adding one.
    refresh(&master, "pil-stale1");
    let items = call(&master, "pil-stale1", &["pillar.items"]);
    assert_eq!(
        items["_errors"].as_array().map(Vec::len),
        Some(1),
        "{items}"
    );

    // A refresh that succeeds takes the new pillar and drops the error.
    write(&pillar_dir, "data.sls", "small: 3\n");
    refresh(&master, "pil-stale1");
    assert_eq!(
        call(&master, "pil-stale1", &["pillar.items"]),
        json!({"small": 3})
    );
}

/// Two pillar environments under `dir`, `pillar-base` (`where: base`, `only_base`) and
/// `pillar-dev` (`where: dev`, `only_dev`), each with its top file.
fn pillar_envs(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (pb, pd) = (dir.join("pillar-base"), dir.join("pillar-dev"));
    write(&pb, "top.sls", "base:\n  '*':\n    - common\n");
    write(&pb, "common.sls", "where: base\nonly_base: 1\n");
    write(&pd, "top.sls", "dev:\n  '*':\n    - devdata\n");
    write(&pd, "devdata.sls", "where: dev\nonly_dev: 1\n");
    (pb, pd)
}

/// Two state environments under `dir`, `tree-base` and `tree-dev`, each with an `env` SLS
/// that writes `out/<saltenv>-<pillar tag>.txt` holding the pillar values it saw.
fn state_envs(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let state = format!(
        "env:\n  file.managed:\n    - name: {out}/{{{{ saltenv }}}}-{{{{ pillar.get('tag') }}}}.txt\n    - contents: \"{{{{ pillar.get('where') }}}} {{{{ pillar.get('only_base') }}}} {{{{ pillar.get('only_dev') }}}}\"\n",
        out = out.display()
    );
    let (tb, td) = (dir.join("tree-base"), dir.join("tree-dev"));
    write(&tb, "env.sls", &state);
    write(&td, "env.sls", &state);
    (tb, td)
}

/// A state run's `saltenv=` and `pillarenv=` choose its pillar as Salt's do: `pillarenv=`
/// compiles that pillar environment only; with the master's `pillarenv_from_saltenv` the
/// run's `saltenv=` is its pillarenv; a run naming neither sees the minion's pillar (every
/// environment, merged).
#[test]
fn state_runs_take_saltenv_and_pillarenv_from_the_request() {
    let master = Master::start_with(|dir| {
        let (pb, pd) = pillar_envs(dir);
        let (tb, td) = state_envs(dir);
        format!(
            "auto_accept: true\npillarenv_from_saltenv: true\npillar_roots:\n  base:\n    - {}\n  dev:\n    - {}\nfile_roots:\n  base:\n    - {}\n  dev:\n    - {}\n",
            pb.display(),
            pd.display(),
            tb.display(),
            td.display()
        )
    });
    let out = master.dir.0.join("out");
    let _m = master.minion("pil-env1", "");
    master.wait_for("pil-env1");
    let run = |tag: &str, extra: &[&str]| -> String {
        let pillar = format!("pillar={{\"tag\": \"{tag}\"}}");
        let mut args = vec!["state.apply", "env", pillar.as_str()];
        args.extend_from_slice(extra);
        let r = call(&master, "pil-env1", &args);
        assert!(r.is_object(), "{tag}: {r}");
        let saltenv = extra
            .iter()
            .find_map(|a| a.strip_prefix("saltenv="))
            .unwrap_or("base");
        std::fs::read_to_string(out.join(format!("{saltenv}-{tag}.txt"))).unwrap()
    };
    // Neither named: the minion's pillar, both environments merged (base, then dev).
    assert_eq!(run("none", &[]), "dev 1 1\n");
    // pillarenv_from_saltenv: the run's saltenv is its pillarenv.
    assert_eq!(run("dev", &["saltenv=dev"]), "dev None 1\n");
    assert_eq!(run("base", &["saltenv=base"]), "base 1 None\n");
    // pillarenv= wins over the saltenv.
    assert_eq!(
        run("both", &["saltenv=base", "pillarenv=dev"]),
        "dev None 1\n"
    );
    // The minion's own pillar is untouched by those runs.
    assert_eq!(
        call(&master, "pil-env1", &["pillar.items"]),
        json!({"where": "dev", "only_base": 1, "only_dev": 1})
    );
    // A pillarenv that pillar_roots lacks: Salt compiles no top and no error, an empty
    // pillar (only the override).
    assert_eq!(run("nope", &["pillarenv=nope"]), "None None None\n");
}

/// Masterless (`file_client: local`), a state run's `saltenv=`/`pillarenv=` choose its pillar
/// from the minion's own `pillar_roots` as they do through a master.
#[test]
fn masterless_state_runs_take_saltenv_and_pillarenv_from_the_request() {
    let scratch = saltq_tests::Scratch::new("local-env");
    let d = scratch.0.as_path();
    let (pb, pd) = pillar_envs(d);
    let (tb, td) = state_envs(d);
    let out = d.join("out");
    let conf = d.join("etc");
    write(
        &conf,
        "minion",
        &format!(
            "id: local-env1\nroot_dir: {}\nfile_client: local\npillar_roots:\n  base:\n    - {}\n  dev:\n    - {}\nfile_roots:\n  base:\n    - {}\n  dev:\n    - {}\n",
            d.join("root").display(),
            pb.display(),
            pd.display(),
            tb.display(),
            td.display()
        ),
    );
    let run = |tag: &str, extra: &[&str]| -> String {
        let pillar = format!("pillar={{\"tag\": \"{tag}\"}}");
        let o = std::process::Command::new(bin("saltq-minion"))
            .arg("-c")
            .arg(&conf)
            .args(["call", "state.apply", "env", pillar.as_str()])
            .args(extra)
            .args(["--out", "json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{tag}: {o:?}");
        let saltenv = extra
            .iter()
            .find_map(|a| a.strip_prefix("saltenv="))
            .unwrap_or("base");
        std::fs::read_to_string(out.join(format!("{saltenv}-{tag}.txt"))).unwrap()
    };
    assert_eq!(run("none", &[]), "dev 1 1\n");
    assert_eq!(
        run("dev", &["saltenv=dev", "pillarenv=dev"]),
        "dev None 1\n"
    );
    assert_eq!(run("base", &["pillarenv=base"]), "base 1 None\n");
    // Without pillarenv_from_saltenv (a master option; the minion's default is off), the
    // saltenv alone does not narrow the pillar.
    assert_eq!(run("saltenv", &["saltenv=dev"]), "dev 1 1\n");
}

/// Masterless, the minion's own `pillarenv` and `saltenv` options choose its pillar as
/// salt-call --local 3007.8 does (recorded): `pillarenv: dev` compiles dev alone; `saltenv:
/// dev` does too with `pillarenv_from_saltenv`, and without it every environment, merged.
#[test]
fn masterless_pillar_takes_the_minions_saltenv_and_pillarenv() {
    let scratch = saltq_tests::Scratch::new("local-envopt");
    let d = scratch.0.as_path();
    let (pb, pd) = pillar_envs(d);
    let items = |name: &str, extra: &str| -> String {
        let conf = d.join(name);
        write(
            &conf,
            "minion",
            &format!(
                "id: local-envopt1\nroot_dir: {}\nfile_client: local\npillar_roots:\n  base:\n    - {}\n  dev:\n    - {}\n{extra}",
                d.join("root").display(),
                pb.display(),
                pd.display(),
            ),
        );
        let o = std::process::Command::new(bin("saltq-minion"))
            .arg("-c")
            .arg(&conf)
            .args(["call", "pillar.items", "--out", "json"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{name}: {o:?}");
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        // The text, so that the key order is compared too.
        v["local"].to_string()
    };
    assert_eq!(
        items("none", ""),
        r#"{"where":"dev","only_base":1,"only_dev":1}"#
    );
    assert_eq!(
        items("pillarenv", "pillarenv: dev\n"),
        r#"{"where":"dev","only_dev":1}"#
    );
    assert_eq!(
        items(
            "from-saltenv",
            "saltenv: dev\npillarenv_from_saltenv: true\n"
        ),
        r#"{"where":"dev","only_dev":1}"#
    );
    assert_eq!(
        items("saltenv", "saltenv: dev\n"),
        r#"{"where":"dev","only_base":1,"only_dev":1}"#
    );
}
