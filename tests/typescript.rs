//! The npm package's TypeScript declarations of everything that crosses the JS boundary are
//! generated from the Rust types (ts-rs), into js/types.d.ts. This test regenerates them and fails
//! when the committed file differs, so the declarations cannot drift from the engine;
//! `LEAKSCOPE_UPDATE_TYPES=1 cargo test --test typescript` rewrites the file.
use ts_rs::TS;

use leakscope::assess::scoring::Accuracy;
use leakscope::attack::{Progress, StepTiming};
use leakscope::audit::summary::{FeatureLeak, MeanStd, SummaryRow, Threshold, Verdict};
use leakscope::audit::{
    Audit, AuditOptions, AuditPlan, AuditProgress, AuditReport, CellResult, NamedSvg, PlannedCell, Point, RunningCell,
    Study, TableInfo,
};
use leakscope::client::accountant::{OverRounds, PrivacyAnswer, PrivacyQuery};
use leakscope::client::canary::{CanaryAudit, CanaryEstimate, CanaryQuery, Threat};
use leakscope::client::defence::Defence;
use leakscope::client::fedavg::{LocalOrder, LocalTraining};
use leakscope::client::optimizer::{ClientOptimizer, OptimizerKind};
use leakscope::client::privacy::Privacy;
use leakscope::config::{
    AttackConfig, AttackKind, AttackSpec, EpochPrior, LabelMode, MemberRange, Optimiser, Protocol,
};
use leakscope::options::{ProtocolKind, RunOptions};
use leakscope::plan::limits::Limits;
use leakscope::plan::{Decision, Probe, RunPlan};
use leakscope::report::{
    Confidence, ConfidenceLevels, ConfidentQuarter, EntropyBucket, FeatureHeader, PriorFit, Report, RowReport,
};
use leakscope::runtime::{BackendInfo, BackendKind, EngineInfo, MeasuredRate, StepEngine};
use leakscope::table::{ColumnInfo, ColumnKind, Dialect, NonNumeric, SchemaSummary, TextEncoding, Treatment};

fn declaration<T: TS>() -> String {
    let docs = T::docs().unwrap_or_default();
    format!("{docs}export {}\n", T::decl())
}

fn generated() -> String {
    let mut out = String::from(
        "// Generated from the engine's Rust types by tests/typescript.rs (ts-rs): do not edit.\n\
         // Regenerate with `LEAKSCOPE_UPDATE_TYPES=1 cargo test --test typescript`.\n\n",
    );
    for decl in [
        declaration::<RunOptions>(),
        declaration::<AttackKind>(),
        declaration::<ProtocolKind>(),
        declaration::<EpochPrior>(),
        declaration::<LabelMode>(),
        declaration::<ColumnKind>(),
        declaration::<SchemaSummary>(),
        declaration::<ColumnInfo>(),
        declaration::<Treatment>(),
        declaration::<NonNumeric>(),
        declaration::<Dialect>(),
        declaration::<TextEncoding>(),
        declaration::<Progress>(),
        declaration::<StepTiming>(),
        declaration::<Report>(),
        declaration::<leakscope::report::AttackDetails>(),
        declaration::<leakscope::report::RowDetails>(),
        declaration::<leakscope::report::reconstruction::ReconstructionReport>(),
        declaration::<leakscope::report::reconstruction::ReconstructedRow>(),
        declaration::<leakscope::report::reconstruction::ConfidenceCount>(),
        declaration::<Accuracy>(),
        declaration::<FeatureHeader>(),
        declaration::<RowReport>(),
        declaration::<Confidence>(),
        declaration::<ConfidenceLevels>(),
        declaration::<EntropyBucket>(),
        declaration::<ConfidentQuarter>(),
        declaration::<PriorFit>(),
        declaration::<leakscope::attack::priors::subspace::SubspaceSummary>(),
        declaration::<leakscope::report::SecondLayerSummary>(),
        declaration::<leakscope::attack::inversion::ensemble::EnsembleRounds>(),
        declaration::<leakscope::attack::inversion::ensemble::RoundChange>(),
        declaration::<leakscope::assess::fallback::FallbackSummary>(),
        declaration::<leakscope::assess::table_guess::GuessWeighed>(),
        declaration::<leakscope::assess::update_choice::UpdateChoice>(),
        declaration::<leakscope::assess::update_choice::Rerun>(),
        declaration::<leakscope::assess::update_choice::EpochOrders>(),
        declaration::<leakscope::assess::update_choice::Pursuit>(),
        declaration::<leakscope::report::shown::RowsShown>(),
        declaration::<leakscope::report::shown::CellsShown>(),
        declaration::<leakscope::attack::priors::categories_held::CategoriesHeld>(),
        declaration::<leakscope::attack::priors::categories_held::FeatureHeld>(),
        declaration::<leakscope::table::determined::ReadFromCategory>(),
        declaration::<leakscope::report::Provenance>(),
        declaration::<leakscope::report::ProvenanceGroup>(),
        declaration::<leakscope::report::ReasonCount>(),
        declaration::<leakscope::report::reconstruction::ProvenanceCount>(),
        declaration::<leakscope::report::reconstruction::UpdateFit>(),
        declaration::<leakscope::attack::attribute::AttributeReport>(),
        declaration::<AttackSpec>(),
        declaration::<leakscope::attack::describe::AttackInfo>(),
        declaration::<leakscope::attack::describe::SettingInfo>(),
        declaration::<leakscope::attack::describe::SettingInput>(),
        declaration::<leakscope::config::TableakSettings>(),
        declaration::<leakscope::config::AttributeSettings>(),
        declaration::<leakscope::config::Membership>(),
        declaration::<leakscope::attack::attribute::membership::MembershipReport>(),
        declaration::<leakscope::config::CafeSettings>(),
        declaration::<leakscope::attack::cafe::CafeReport>(),
        declaration::<Privacy>(),
        declaration::<OverRounds>(),
        declaration::<leakscope::client::activation::Activation>(),
        declaration::<leakscope::client::head::Head>(),
        declaration::<leakscope::client::head::Task>(),
        declaration::<leakscope::report::RegressionLabels>(),
        declaration::<leakscope::attack::registry::NotApplied>(),
        declaration::<PrivacyQuery>(),
        declaration::<CanaryQuery>(),
        declaration::<PrivacyAnswer>(),
        declaration::<CanaryAudit>(),
        declaration::<CanaryEstimate>(),
        declaration::<Threat>(),
        declaration::<AttackConfig>(),
        declaration::<Protocol>(),
        declaration::<LocalTraining>(),
        declaration::<LocalOrder>(),
        declaration::<ClientOptimizer>(),
        declaration::<OptimizerKind>(),
        declaration::<Optimiser>(),
        declaration::<Defence>(),
        declaration::<BackendInfo>(),
        declaration::<BackendKind>(),
        declaration::<StepEngine>(),
        declaration::<MeasuredRate>(),
        declaration::<EngineInfo>(),
        declaration::<Limits>(),
        declaration::<MemberRange>(),
        declaration::<RunPlan>(),
        declaration::<Probe>(),
        declaration::<Decision>(),
        declaration::<AuditOptions>(),
        declaration::<AuditPlan>(),
        declaration::<PlannedCell>(),
        declaration::<RunningCell>(),
        declaration::<AuditProgress>(),
        declaration::<CellResult>(),
        declaration::<AuditReport>(),
        declaration::<NamedSvg>(),
        declaration::<Audit>(),
        declaration::<TableInfo>(),
        declaration::<Point>(),
        declaration::<Study>(),
        declaration::<SummaryRow>(),
        declaration::<MeanStd>(),
        declaration::<FeatureLeak>(),
        declaration::<Threshold>(),
        declaration::<Verdict>(),
    ] {
        out += &decl;
        out.push('\n');
    }
    out
}

#[test]
fn typescript_declarations_match_the_rust_types() {
    let path = format!("{}/js/types.d.ts", env!("CARGO_MANIFEST_DIR"));
    let want = generated();
    if std::env::var("LEAKSCOPE_UPDATE_TYPES").as_deref() == Ok("1") {
        std::fs::write(&path, &want).unwrap();
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "js/types.d.ts is stale: regenerate it with `LEAKSCOPE_UPDATE_TYPES=1 cargo test --test typescript`"
    );
}

/// Every type a declaration names is declared: a Rust type that gained a field of a new type
/// fails here, not only in the package's `tsc` test.
#[test]
fn every_type_the_declarations_name_is_declared() {
    let text = generated();
    let declared: std::collections::BTreeSet<&str> = text
        .split("export type ")
        .skip(1)
        .filter_map(|rest| rest.split([' ', '<']).next())
        .collect();
    let builtin = ["Array", "Record", "Partial", "Uint8Array"];
    let mut missing = std::collections::BTreeSet::new();
    let prose = |l: &&str| ["*", "/**", "//"].iter().any(|p| l.trim_start().starts_with(p));
    for line in text.lines().filter(|l| !prose(l)) {
        for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let named = word.chars().next().is_some_and(|c| c.is_ascii_uppercase());
            if named && !declared.contains(word) && !builtin.contains(&word) {
                missing.insert(word.to_string());
            }
        }
    }
    assert!(missing.is_empty(), "named but not declared: {missing:?}");
}
