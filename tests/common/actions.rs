//! GitHub Actions, simulated on this machine: a `gh` that records `workflow run` dispatches
//! and answers `run list` from the runs the harness keeps, and runners that run a dispatched
//! job of the repository's own workflow file as a runner would: a fresh clone of the remote
//! at the dispatched ref (the checkout step), then each `run:` step in order with `bash -eo
//! pipefail`, the job's and the step's environment, its `${{ … }}` expressions evaluated
//! (inputs, secrets, `github.token`), in a home of its own. A runner can be lost mid-step:
//! its whole process group is killed and its run ends `cancelled`, as when GitHub loses
//! the machine.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_norway::Value as Yaml;

use super::{write, TestEnv, BIN};

/// The simulated service: its directory, the runners it started, and a flag that stops it.
pub struct Actions {
    sim: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Every job run: (story or `coordinator`, attempt, conclusion), in the order they ended.
    pub ended: Arc<Mutex<Vec<(String, String, String)>>>,
}

/// What the runners get besides the workflow: the repository secrets, and where the shared
/// agent behaviours are (each runner's home links to them).
pub struct Setup {
    /// The bare remote standing in for GitHub.
    pub remote: PathBuf,
    /// Secrets by name.
    pub secrets: BTreeMap<String, String>,
    /// Which machines the runners are.
    pub layout: Layout,
    /// Whether the runners have git-bmad already (a self-hosted image); else a job installs
    /// it with `cargo install`, which the runners' `cargo` logs and does in an instant.
    pub preinstalled: bool,
}

/// Which machines the runners are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// GitHub's hosted runner: the workspace and `RUNNER_TEMP` under `HOME`
    /// (`/home/runner/work/…`), bubblewrap working.
    #[default]
    Hosted,
    /// The same where bubblewrap may not make a user namespace (stock `ubuntu-24.04`, whose
    /// AppArmor refuses it), and `sudo` asks for a password, so the workflow cannot lift it.
    Refused,
    /// A self-hosted runner: its folder (workspace, `RUNNER_TEMP`) in this directory, outside
    /// `HOME` and `/tmp`.
    SelfHosted(PathBuf),
}

impl Actions {
    /// Start the service for `env`: a `gh` on every command's PATH, and a thread that
    /// starts a runner per dispatch.
    pub fn start(env: &TestEnv, setup: Setup) -> Actions {
        let sim = env.root().join("actions");
        std::fs::create_dir_all(sim.join("runs")).unwrap();
        std::fs::create_dir_all(env.root().join("home/agent/kill")).unwrap();
        // A service started again (a resume) goes on where the last one stopped.
        if !sim.join("dispatches").exists() {
            std::fs::write(sim.join("dispatches"), "").unwrap();
        }
        env.executable("gh", &fake_gh(&sim, &setup.remote));
        // The person who coordinates is logged in to gh.
        write(
            &env.root().join("home"),
            ".config/gh/hosts.yml",
            "github.com:\n    oauth_token: gho_personsimulated\n",
        );
        let names: Vec<&str> = setup.secrets.keys().map(String::as_str).collect();
        std::fs::write(sim.join("secrets"), names.join("\n")).unwrap();
        // `git bmad` on a runner: git finds git-bmad on PATH.
        let tools = env.root().join("runner-tools");
        std::fs::create_dir_all(&tools).unwrap();
        let _ = std::fs::remove_file(tools.join("git-bmad"));
        if setup.preinstalled {
            let _ = std::os::unix::fs::symlink(BIN, tools.join("git-bmad"));
        }
        // `cargo install --git … git-bmad`: the build, logged, where cargo puts it.
        executable(
            &tools.join("cargo"),
            &format!(
                "#!/bin/sh\necho \"cargo $*\" >> '{}'\nmkdir -p \"$HOME/.cargo/bin\"\ncp '{BIN}' \"$HOME/.cargo/bin/git-bmad\"\n",
                sim.join("cargo.log").display()
            ),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(Mutex::new(Vec::new()));
        let world = World {
            root: env.root(),
            sim: sim.clone(),
            setup: Arc::new(setup),
            ended: ended.clone(),
        };
        // Dispatched before this start (a service started again): done with.
        let taken = std::fs::read_to_string(sim.join("dispatches"))
            .unwrap_or_default()
            .lines()
            .count();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || world.serve(&flag, taken));
        Actions {
            sim,
            stop,
            thread: Some(thread),
            ended,
        }
    }

    /// Each job's `timeout-minutes` as GitHub would read it: (story, attempt, minutes).
    pub fn timeouts(&self) -> Vec<(String, String, u32)> {
        std::fs::read_to_string(self.sim.join("timeouts"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0].to_owned(), f[1].to_owned(), f[2].parse().unwrap())
            })
            .collect()
    }

    /// Make the next `call` of `gh` (`run list`, `workflow run`) fail, printing `said`, as
    /// GitHub's API answers now and then; queued after the failures asked before.
    pub fn fail_gh(&self, call: &str, said: &str) {
        let mut queue = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.sim.join("gh-fail"))
            .unwrap();
        std::io::Write::write_all(&mut queue, format!("{call}\t{said}\n").as_bytes()).unwrap();
    }

    /// The failures queued with [`Actions::fail_gh`] that no call has met yet.
    pub fn gh_failures_left(&self) -> usize {
        std::fs::read_to_string(self.sim.join("gh-fail"))
            .unwrap_or_default()
            .lines()
            .count()
    }

    /// When each `call` of `gh` that GitHub answered (none the test failed) began, in
    /// nanoseconds, in order.
    pub fn answered(&self, call: &str) -> Vec<u128> {
        std::fs::read_to_string(self.sim.join("gh.answered"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, c)| *c == call)
            .map(|(t, _)| t.parse().unwrap())
            .collect()
    }

    /// Every build of git-bmad a job made (`cargo install` calls).
    pub fn builds(&self) -> Vec<String> {
        std::fs::read_to_string(self.sim.join("cargo.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The jobs ended so far, once `done` says enough have; the test fails past five
    /// minutes, with what the runners printed.
    pub fn wait_for(
        &self,
        done: impl Fn(&[(String, String, String)]) -> bool,
    ) -> Vec<(String, String, String)> {
        let deadline = std::time::Instant::now() + Duration::from_secs(300);
        loop {
            let ended = self.ended.lock().unwrap().clone();
            if done(&ended) {
                return ended;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still waiting for jobs: {ended:?}\n{}",
                runner_logs(self.sim.parent().unwrap())
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every `gh` call so far.
    pub fn gh_log(&self) -> String {
        std::fs::read_to_string(self.sim.join("gh.log")).unwrap_or_default()
    }
}

impl Drop for Actions {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `gh` as the coordinator and the runners call it.
fn fake_gh(sim: &Path, remote: &Path) -> String {
    format!(
        r#"#!/bin/sh
sim='{sim}'
echo "gh $*" >> "$sim/gh.log"
# A failure the test queued for this call (`<call>\t<what gh prints>` a line), answered once,
# as GitHub's API answers now and then: a 5xx, a rate limit.
if [ -s "$sim/gh-fail" ]; then
  line=$(head -n1 "$sim/gh-fail")
  case "$line" in
    "$1 $2	"*) sed -i 1d "$sim/gh-fail"; printf '%s\n' "${{line#*	}}" >&2; exit 1 ;;
  esac
fi
# When each call GitHub answered began, in nanoseconds.
echo "$(date +%s%N) $1 $2" >> "$sim/gh.answered"
default=$(git --git-dir='{remote}' symbolic-ref --short HEAD)
hosts="${{GH_CONFIG_DIR:-$HOME/.config/gh}}/hosts.yml"
case "$1 $2" in
  'auth login')
    # --with-token: the token on standard input, kept in gh's own store (no keyring here).
    token=$(cat)
    mkdir -p "$(dirname "$hosts")"
    printf 'github.com:\n    oauth_token: %s\n    git_protocol: https\n' "$token" > "$hosts"
    exit 0 ;;
  'auth setup-git')
    git config --global credential.https://github.com.helper '!gh auth git-credential'
    exit 0 ;;
esac
# Every other call needs a login, as gh does.
if [ -z "$GH_TOKEN" ] && ! grep -q oauth_token "$hosts" 2>/dev/null; then
  printf 'To get started with GitHub CLI, please run:  gh auth login\nAlternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token.\n' >&2
  exit 4
fi
case "$1 $2" in
  'workflow run')
    shift 2; workflow=$1; shift
    ref= inputs= names=
    while [ $# -gt 0 ]; do
      case "$1" in
        --ref) ref=$2; shift 2 ;;
        -f) inputs="$inputs	$2"; names="$names ${{2%%=*}}"; shift 2 ;;
        *) echo "gh (simulated): unknown flag $1" >&2; exit 1 ;;
      esac
    done
    # GitHub dispatches only workflows on the default branch, and only to a branch or tag.
    git --git-dir='{remote}' cat-file -e "$default:.github/workflows/$workflow" 2>/dev/null || {{
      echo "could not find any workflows named $workflow" >&2
      exit 1
    }}
    git --git-dir='{remote}' show-ref -q --verify "refs/heads/$ref" || git --git-dir='{remote}' show-ref -q --verify "refs/tags/$ref" || {{
      echo "could not create workflow dispatch event: HTTP 422: No ref found for: $ref" >&2
      exit 1
    }}
    # GitHub refuses a dispatch with an input the workflow at the ref does not declare.
    text=$(git --git-dir='{remote}' show "$ref:.github/workflows/$workflow")
    for name in $names; do
      printf '%s\n' "$text" | grep -q "^      $name:" || {{
        echo "could not create workflow dispatch event: HTTP 422: Unexpected inputs provided: [\"$name\"]" >&2
        exit 1
      }}
    done
    printf '%s\t%s%s\n' "$workflow" "$ref" "$inputs" >> "$sim/dispatches" ;;
  'run list')
    shift 2; workflow=
    while [ $# -gt 0 ]; do
      case "$1" in --workflow) workflow=$2; shift 2 ;; *) shift ;; esac
    done
    printf '['; first=1
    for f in "$sim/runs/$workflow"/*.json; do
      [ -f "$f" ] || continue
      [ $first = 1 ] || printf ','
      first=0; cat "$f"
    done
    printf ']\n' ;;
  'secret list')
    printf '['; first=1
    for name in $(cat "$sim/secrets"); do
      [ $first = 1 ] || printf ','
      first=0; printf '{{"name":"%s","updatedAt":"2026-12-01T00:00:00Z"}}' "$name"
    done
    printf ']\n' ;;
  'repo view') printf '{{"defaultBranchRef":{{"name":"%s"}}}}\n' "$default" ;;
  'pr list') exit 0 ;;
  'pr create') echo "https://github.com/example/proj/pull/$$" ;;
  *) echo "gh (simulated): $* is not simulated" >&2; exit 1 ;;
esac
"#,
        sim = sim.display(),
        remote = remote.display()
    )
}

/// What the service's thread owns.
#[derive(Clone)]
struct World {
    root: PathBuf,
    sim: PathBuf,
    setup: Arc<Setup>,
    ended: Arc<Mutex<Vec<(String, String, String)>>>,
}

/// One dispatched job.
#[derive(Clone, Debug)]
struct Dispatch {
    id: usize,
    workflow: String,
    git_ref: String,
    inputs: BTreeMap<String, String>,
}

impl World {
    /// Start a runner per dispatch after the first `taken` until stopped; wait for the
    /// runners at the end.
    fn serve(&self, stop: &AtomicBool, mut taken: usize) {
        let mut runners = Vec::new();
        let running: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
        while !stop.load(Ordering::SeqCst) {
            let text = std::fs::read_to_string(self.sim.join("dispatches")).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            for line in &lines[taken.min(lines.len())..] {
                taken += 1;
                let mut fields = line.split('\t');
                let workflow = fields.next().unwrap_or_default().to_owned();
                let git_ref = fields.next().unwrap_or_default().to_owned();
                let inputs = fields
                    .filter_map(|f| f.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                let dispatch = Dispatch {
                    id: taken,
                    workflow,
                    git_ref,
                    inputs,
                };
                let world = self.clone();
                let running = running.clone();
                runners.push(std::thread::spawn(move || {
                    // A harness that fails says so as the job's end, never leaves it running.
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        world.run_job(&dispatch, &running)
                    }));
                    if ran.is_err() {
                        let (workflow, id) = (&dispatch.workflow, dispatch.id);
                        world.set_run(workflow, id, "harness", "completed", "failure");
                        world.ended.lock().unwrap().push((
                            "the harness failed".to_owned(),
                            String::new(),
                            "failure".to_owned(),
                        ));
                    }
                }));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        for r in runners {
            let _ = r.join();
        }
    }

    fn set_run(&self, workflow: &str, id: usize, title: &str, status: &str, conclusion: &str) {
        let json = serde_json::json!({
            "databaseId": id,
            "displayTitle": title,
            "status": status,
            "conclusion": conclusion,
        });
        let dir = self.sim.join("runs").join(workflow);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{id}.json"));
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, json.to_string()).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }

    /// One job: the workflow read at the dispatched ref, a fresh clone, its steps in order.
    fn run_job(&self, d: &Dispatch, running: &Mutex<Vec<String>>) {
        let remote = &self.setup.remote;
        let workflow_text = git_out(
            remote,
            &[
                "show",
                &format!("{}:.github/workflows/{}", d.git_ref, d.workflow),
            ],
        );
        let workflow: Yaml = serde_norway::from_str(&workflow_text).expect("workflow YAML");
        // An input the dispatch did not give has the workflow's default.
        let mut d = d.clone();
        let inputs = &workflow["on"]["workflow_dispatch"]["inputs"];
        for (name, input) in inputs.as_mapping().into_iter().flatten() {
            let name = name.as_str().expect("an input's name").to_owned();
            if let (false, Some(default)) = (d.inputs.contains_key(&name), input.get("default")) {
                let default = self.expand(default, &d);
                d.inputs.insert(name, default);
            }
        }
        let d = &d;
        let title = self.expand(&workflow["run-name"], d);
        self.set_run(&d.workflow, d.id, &title, "in_progress", "");
        // The workflow's concurrency group: never two jobs of one story at once.
        let group = self.expand(&workflow["concurrency"]["group"], d);
        {
            let mut now = running.lock().unwrap();
            assert!(!now.contains(&group), "two jobs of {group} at once");
            now.push(group.clone());
        }
        // What the test may lose mid-step: a story's job by its key, the coordinator's by
        // `coordinator`.
        let story = d
            .inputs
            .get("story")
            .cloned()
            .unwrap_or_else(|| "coordinator".to_owned());
        let conclusion = self.steps(d, &workflow, &story);
        running.lock().unwrap().retain(|g| *g != group);
        self.set_run(&d.workflow, d.id, &title, "completed", conclusion);
        self.ended.lock().unwrap().push((
            story,
            d.inputs.get("attempt").cloned().unwrap_or_default(),
            conclusion.to_owned(),
        ));
    }

    /// Run the job's steps; its conclusion.
    fn steps(&self, d: &Dispatch, workflow: &Yaml, story: &str) -> &'static str {
        let machine = self.root.join(format!("runners/{}", d.id));
        let home = machine.join("home");
        std::fs::create_dir_all(&home).unwrap();
        // The agents' behaviours and logs are shared, as one model API serves every runner.
        std::os::unix::fs::symlink(self.root.join("home/agent"), home.join("agent")).unwrap();
        std::fs::write(home.join(".gitconfig"), "").unwrap();
        // The runner's own programs: a sudo that asks for a password (a self-hosted runner's,
        // or one where the workflow may not lift AppArmor), and on a refusing machine the
        // bubblewrap that answers as Ubuntu 24.04's does.
        let tools = machine.join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        executable(
            &tools.join("sudo"),
            "#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n",
        );
        if self.setup.layout == Layout::Refused {
            executable(
                &tools.join("bwrap"),
                "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
            );
        }
        // The runner's install (its registration, and the Runner.Worker that runs each
        // step) and its work folder: apart under HOME on GitHub's machines, the work folder
        // inside the install on a self-hosted one.
        let (install, folder) = match &self.setup.layout {
            Layout::Hosted | Layout::Refused => (home.join("runners/2.330.0"), home.join("work")),
            Layout::SelfHosted(outside) => {
                let install = outside.join(format!("runner-{}", d.id));
                (install.clone(), install.join("_work"))
            }
        };
        std::fs::create_dir_all(install.join("bin")).unwrap();
        std::fs::write(
            install.join(".credentials"),
            "{\"scheme\": \"OAuth\", \"data\": {\"clientId\": \"runner-registration-7f3a\"}}\n",
        )
        .unwrap();
        // The step's shell is started by the runner's Runner.Worker, as GitHub's is: here a
        // copy of bash under that name.
        let worker = install.join("bin/Runner.Worker");
        std::fs::copy(which_bash(), &worker).unwrap();
        let temp = folder.join("_temp");
        std::fs::create_dir_all(&temp).unwrap();
        let work = folder.join("proj/proj");
        let clone = Command::new("git")
            .args(["clone", "-q", "--branch", &d.git_ref])
            .arg(&self.setup.remote)
            .arg(&work)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &home)
            .status()
            .unwrap();
        assert!(clone.success(), "the checkout step");
        // The workflow's one job.
        let jobs = workflow["jobs"].as_mapping().expect("jobs");
        assert_eq!(jobs.len(), 1, "one job per workflow");
        let job = jobs.values().next().unwrap();
        // actions/checkout keeps the job's token in the clone's config unless told not to.
        let checkout = &job["steps"][0]["with"]["persist-credentials"];
        if checkout.as_bool() != Some(false) && checkout.as_str() != Some("false") {
            let header = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NpbXVsYXRlZA==";
            git_out(
                &work,
                &["config", "http.https://github.com/.extraheader", header],
            );
        }
        // Its time limit, which GitHub takes only as a number of minutes.
        let minutes = self.expand(&job["timeout-minutes"], d);
        let minutes: u32 = minutes.parse().expect("timeout-minutes is a number");
        let mut timeouts = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.sim.join("timeouts"))
            .unwrap();
        let attempt = d.inputs.get("attempt").cloned().unwrap_or_default();
        std::io::Write::write_all(
            &mut timeouts,
            format!("{story}\t{attempt}\t{minutes}\n").as_bytes(),
        )
        .unwrap();
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in job["env"].as_mapping().into_iter().flatten() {
            env.insert(k.as_str().unwrap().to_owned(), self.expand(v, d));
        }
        let path = format!(
            "{}:{}:{}:{}:{}",
            home.join(".cargo/bin").display(),
            tools.display(),
            self.root.join("bin").display(),
            self.root.join("runner-tools").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        // What actions/cache saves when the job succeeds: (path, key) of each miss.
        let mut to_save = Vec::new();
        for (n, step) in job["steps"].as_sequence().unwrap().iter().enumerate() {
            if let Some(uses) = step["uses"].as_str() {
                if uses.starts_with("actions/cache@") {
                    let with = |name: &str| self.expand_in(&step["with"][name], d, &env);
                    let path = with("path");
                    let path = match path.strip_prefix("~/") {
                        Some(rest) => home.join(rest),
                        None => PathBuf::from(path),
                    };
                    let saved = self.sim.join("cache").join(with("key"));
                    if saved.is_file() {
                        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                        std::fs::copy(&saved, &path).unwrap();
                    } else {
                        to_save.push((path, saved));
                    }
                    continue;
                }
                assert!(
                    n == 0 && uses.starts_with("actions/checkout@"),
                    "only the checkout and the cache are actions: {uses}"
                );
                continue;
            }
            let script = step["run"].as_str().expect("a run: step");
            let file = temp.join(format!("step-{n}.sh"));
            std::fs::write(&file, script).unwrap();
            let mut cmd = Command::new(&worker);
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
                .arg(&file)
                .current_dir(&work)
                .env_clear()
                .env("PATH", &path)
                .env("HOME", &home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("LC_ALL", "C")
                .env("TZ", "UTC")
                .env("CI", "true")
                .env("GITHUB_ACTIONS", "true")
                .env("RUNNER_TEMP", &temp)
                .env("GITHUB_WORKSPACE", &work)
                .env("BMAD_ACTIONS_POLL_MS", "100")
                .env("GITHUB_SERVER_URL", "https://github.com")
                .env("GITHUB_REPOSITORY", "example/proj")
                .env("GITHUB_RUN_ID", d.id.to_string())
                .envs(&env)
                .stdin(Stdio::null())
                .stdout(log_file(&machine, n))
                .stderr(log_file(&machine, n))
                .process_group(0);
            for (k, v) in step["env"].as_mapping().into_iter().flatten() {
                cmd.env(k.as_str().unwrap(), self.expand(v, d));
            }
            let child = cmd.spawn().unwrap();
            match self.wait(child, story) {
                Some(true) => {}
                Some(false) => return "failure",
                None => return "cancelled",
            }
        }
        for (path, saved) in to_save {
            if path.is_file() {
                std::fs::create_dir_all(saved.parent().unwrap()).unwrap();
                std::fs::copy(&path, &saved).unwrap();
            }
        }
        "success"
    }

    /// Wait for a step; `None` when the machine was lost (the test asked for it by leaving
    /// `home/agent/kill/<story>`: its whole process group is killed).
    fn wait(&self, mut child: Child, story: &str) -> Option<bool> {
        let request = self.root.join("home/agent/kill").join(story);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status.success());
            }
            if request.exists() {
                let _ = std::fs::remove_file(&request);
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A workflow value with its `${{ … }}` expressions evaluated; one this harness does not
    /// know fails the test (the runner would have a value the test did not think of).
    fn expand(&self, value: &Yaml, d: &Dispatch) -> String {
        self.expand_in(value, d, &BTreeMap::new())
    }

    /// The same where the job's environment `env` is the `env` context.
    fn expand_in(&self, value: &Yaml, d: &Dispatch, env: &BTreeMap<String, String>) -> String {
        let text = match value {
            Yaml::String(s) => s.clone(),
            Yaml::Number(n) => n.to_string(),
            Yaml::Bool(b) => b.to_string(),
            other => panic!("not a scalar: {other:?}"),
        };
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(start) = rest.find("${{") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find("}}").expect("closed expression") + start;
            let expr = rest[start + 3..end].trim();
            let input = |name: &str| d.inputs.get(name).cloned().expect("a dispatched input");
            let v = if let Some(name) = expr.strip_prefix("inputs.") {
                input(name)
            } else if let Some(name) = expr
                .strip_prefix("fromJSON(inputs.")
                .and_then(|e| e.strip_suffix(')'))
            {
                let value: serde_json::Value =
                    serde_json::from_str(&input(name)).expect("fromJSON of JSON");
                value.to_string()
            } else if let Some(name) = expr.strip_prefix("secrets.") {
                self.setup.secrets.get(name).cloned().unwrap_or_default()
            } else if expr == "github.token" {
                job_token(&self.root)
            } else if expr == "runner.os" {
                "Linux".to_owned()
            } else if let Some(name) = expr.strip_prefix("env.") {
                env.get(name).cloned().expect("a variable of the job's env")
            } else {
                panic!("the harness does not evaluate ${{{{ {expr} }}}}")
            };
            out.push_str(&v);
            rest = &rest[end + 2..];
        }
        out.push_str(rest);
        out
    }
}

/// The job token the runners of the world at `root` are given (`github.token`): its own, as
/// every repository's is.
pub fn job_token(root: &Path) -> String {
    let world = root.file_name().unwrap_or_default().to_string_lossy();
    format!(
        "ghs_simulated_{}",
        world.trim_start_matches("git-bmad-test-")
    )
}

/// What the runners of the world at `root` printed, step by step, for a failure's message.
pub fn runner_logs(root: &Path) -> String {
    let mut logs = Vec::new();
    for machine in std::fs::read_dir(root.join("runners"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for file in std::fs::read_dir(machine.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if file.path().extension().is_some_and(|e| e == "log") {
                logs.push(file.path());
            }
        }
    }
    logs.sort();
    logs.iter()
        .map(|path| {
            format!(
                "== {}\n{}\n",
                path.display(),
                std::fs::read_to_string(path).unwrap_or_default()
            )
        })
        .collect()
}

fn which_bash() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("bash"))
        .find(|p| p.is_file())
        .expect("bash on PATH")
}

fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn log_file(machine: &Path, n: usize) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(machine.join(format!("step-{n}.log")))
        .unwrap()
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Run `cmd` to its end, killed (and the test failed) past `limit`: a coordinator that
/// never ends must not hang the suite.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> super::Run {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = cmd
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            panic!(
                "still running after {limit:?}:\n{}\n{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    super::Run::from(std::process::Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    })
}
