//! Warm-ups an engine runs as it starts, while its page loads a table: the GPU's kernels
//! compiled (`warm_up`), and the CPU engine's code run once so that a browser optimises it
//! (`warm_up_cpu`), before a real run needs either.
use crate::config::{AttackConfig, MemberRange};
use crate::error::Result;
use crate::run::{run_attack, time_steps};
use crate::runtime::Runtime;
use crate::table::Dataset;

/// A table of 12 rows with three categorical and two continuous columns (13 encoded, so that the
/// span of a batch of 4 is a prior that says something and its kernels run too): what `warm_up`
/// attacks.
const WARM_UP_CSV: &str = "age,job,edu,hours,city,label\n\
25,a,e,40,x,p\n31,b,f,35,y,q\n47,c,g,50,z,p\n52,d,h,45,x,q\n38,a,f,20,y,p\n29,b,g,60,z,q\n\
61,c,h,30,x,p\n44,d,e,40,y,q\n33,a,g,38,z,p\n58,b,h,42,x,q\n27,c,e,55,y,p\n36,d,f,48,z,q\n";

/// Run two steps of the default attack on a small built-in table, so that a GPU compiles the
/// kernels (and burn's, for the client's update) before a real run needs them: an engine calls it
/// as it starts, while its page loads a table, and the first run then starts at once. Returns the
/// seconds it took.
pub async fn warm_up(runtime: &Runtime) -> Result<f64> {
    let start = web_time::Instant::now();
    let (dataset, config) = warm_up_problem(4, Some(1), 2)?;
    let range = MemberRange { first: 0, count: 1 };
    time_steps(runtime, &dataset, &config, range, 1, 2, &mut |_| true).await?;
    Ok(start.elapsed().as_secs_f64())
}

/// Steps of `warm_up_cpu`'s attack: its code, not its answer, is the point (in Node, the engine's
/// first run on the Adult sample gained as much after 40 as after 300).
const CPU_WARM_UP_STEPS: usize = 40;

/// Run the default attack whole, briefly, on the built-in table, so that a browser compiles the
/// CPU engine's code in its optimising tier before a real run needs it. V8 runs a WebAssembly
/// function first in a baseline tier and optimises it once it has run a while; an attack runs its
/// proofs and assessment once, so the page's first attack ran them in the baseline tier (the
/// Adult sample, B = 32, in Node: the assessment 1.4-1.7 s, against 0.5-0.7 s after this). An
/// engine runs it when idle after it starts; `keep_going` is asked at each progress report, and
/// a real run that starts meanwhile cuts it short. Its seconds, or None where it was cut short.
pub async fn warm_up_cpu(runtime: &Runtime, keep_going: &dyn Fn() -> bool) -> Option<f64> {
    let start = web_time::Instant::now();
    let (dataset, config) = warm_up_problem(8, None, CPU_WARM_UP_STEPS).ok()?;
    run_attack(runtime, &dataset, &config, &mut |_| keep_going())
        .await
        .ok()?;
    Some(start.elapsed().as_secs_f64())
}

/// `warm_up`'s table and an attack on it: the default attack, `ensemble` members (None: the
/// default), a batch of `batch_size`, `iterations` steps.
fn warm_up_problem(batch_size: usize, ensemble: Option<usize>, iterations: usize) -> Result<(Dataset, AttackConfig)> {
    let raw = crate::table::parse_csv(WARM_UP_CSV.as_bytes(), WARM_UP_CSV.len())?;
    let options = crate::options::RunOptions {
        label: "label".into(),
        batch_size,
        ensemble,
        iterations,
        ..Default::default()
    };
    let dataset = Dataset::from_raw(&raw, &options.dataset_options())?;
    Ok((dataset, options.attack_config()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attack::inversion::driver::timing;
    use crate::run::prepare;

    #[test]
    fn the_warm_up_runs_the_default_attack_on_its_table() {
        let seconds = pollster::block_on(warm_up(&Runtime::cpu())).unwrap();
        assert!(seconds > 0.0);
        // Outside a run nothing is timed, and nothing is left behind for the next run.
        assert_eq!(timing::take(), None);
        // Its batch leaves the span prior on, so that prior's kernels are compiled too (a run
        // after the warm-up created no pipeline in the page: docs/results/webgpu.md).
        let rt = Runtime::cpu();
        let (dataset, config) = warm_up_problem(4, Some(1), 2).unwrap();
        let setup = pollster::block_on(prepare(&rt, &dataset, &config)).unwrap();
        assert!(setup.active_subspace().is_some(), "the warm-up's span prior is off");
        assert!(setup.inverts.relaxed, "the warm-up runs the relaxation's kernels");
    }

    #[test]
    fn the_cpu_warm_up_runs_a_whole_attack_and_stops_when_asked() {
        let rt = Runtime::cpu();
        let seconds = pollster::block_on(warm_up_cpu(&rt, &|| true));
        assert!(seconds.is_some_and(|s| s > 0.0), "{seconds:?}");
        assert_eq!(timing::take(), None);
        // A run that starts meanwhile cuts it short at its next progress report.
        let asked = std::cell::Cell::new(0);
        let cut = pollster::block_on(warm_up_cpu(&rt, &|| {
            asked.set(asked.get() + 1);
            asked.get() < 3
        }));
        assert_eq!(cut, None);
        assert_eq!(asked.get(), 3, "it stops at the first progress report that says so");
    }
}
