//! The skills librarian (seed 004) on four real skills libraries
//! (`../shared/data/skills`, 339 SKILL.md): parent-child indexing through
//! embed_workspace, search_skills by paraphrased purpose, whole skills back
//! byte for byte, broken frontmatter skipped with a reason, unchanged
//! re-runs embedding nothing, and `ragbox index --skills`.

use ragbox_tests::{Fixture, call, is_error, ok, shared_data, text};
use serde_json::json;

/// A need in other words than the skill's name, and the skill folder(s) that meet it.
const QUERIES: [(&str, &[&str]); 32] = [
    ("spread dataframe work that does not fit in memory across a cluster", &["dask"]),
    ("predict how a small molecule binds to a protein pocket", &["diffdock"]),
    ("simulate Navier-Stokes flows in Python", &["fluidsim"]),
    ("draw flowcharts and sequence diagrams as text inside reports", &["markdown-mermaid-writing"]),
    ("run python code on rented GPUs without managing servers", &["modal"]),
    ("write a formal critique of a manuscript or grant proposal", &["peer-review"]),
    ("build a slide deck for a pitch meeting", &["pptx", "pptx-slide-specification", "pptx-posters"]),
    ("statistical plots of distributions from pandas data with attractive defaults", &["seaborn"]),
    ("store and query genomic variants from VCF files at scale", &["tiledbvcf"]),
    ("look up national debt and federal government spending figures", &["usfiscaldata"]),
    ("apply the company's official colors and typography to a document", &["brand-guidelines"]),
    ("the checks on my pull request are failing, find out why and fix them", &["gh-fix-ci"]),
    ("separate the read model from the write model in a service", &["cqrs-implementation"]),
    ("assess the risks of a product idea before building it", &["before-you-build"]),
    ("turn analytics results into a persuasive narrative for executives", &["data-storytelling"]),
    ("connect an on-premises datacenter to a cloud provider over VPN", &["hybrid-cloud-networking"]),
    ("choose column types, indexes and constraints for a Postgres schema", &["postgresql-table-design"]),
    (
        "rewrite commit history, cherry-pick, and bisect to find the commit that broke the build",
        &["git-advanced-workflows"],
    ),
    ("hand over pager duty to the next engineer at the end of a shift", &["on-call-handoff-patterns"]),
    ("template and package Kubernetes manifests for reuse across environments", &["helm-chart-scaffolding"]),
    ("make the instructions I give a language model produce better answers", &["prompt-engineering-patterns"]),
    (
        "decide between supervised training and preference optimisation to adapt a base model",
        &["finetuning-method-selection", "preference-optimization"],
    ),
    ("retry flaky network calls with exponential backoff in Python", &["python-resilience"]),
    ("load application settings from environment variables with typed validation", &["python-configuration"]),
    ("analyse how malware hides from disassemblers and debuggers", &["anti-reversing-techniques"]),
    ("turn a threat model into concrete security requirements", &["security-requirement-extraction"]),
    ("revenue projections and cash flow forecast for an early-stage company", &["startup-financial-modeling"]),
    ("design tokens and theming for a component library", &["design-system-patterns", "tailwind-design-system"]),
    ("break a large task into subtasks and balance the work across several agents", &["task-coordination-strategies"]),
    ("single-cell gene expression matrices stored in h5ad files", &["anndata"]),
    ("control liquid handling robots from different vendors with one Python API", &["pylabrobot"]),
    ("hierarchical Bayesian model with MCMC sampling", &["pymc"]),
];

/// The skills libraries, with a .gitignore that leaves only the SKILL.md files
/// to index (the scripts and references beside them are listed, not embedded).
pub(crate) fn library() -> Fixture {
    let f = Fixture::empty();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(shared_data().join("skills"))
        .arg(f.workspace.join("skills"))
        .status()
        .expect("copy the skills libraries");
    assert!(status.success());
    f.write(".gitignore", "*\n!*/\n!SKILL.md\n");
    f.write("broken/SKILL.md", "---\nname: [unclosed\ndescription: broken\n---\n# Broken\n");
    f.write("plain/SKILL.md", "# A skill without frontmatter\n\nJust text.\n");
    f
}

/// The matches of a search_skills answer: (path, full content).
pub(crate) fn matches(answer: &str) -> Vec<(String, String)> {
    answer
        .split("\n## Match ")
        .skip(1)
        .map(|m| {
            let path = m.split("**Path**: ").nth(1).and_then(|r| r.lines().next()).unwrap_or_default().to_string();
            let start =
                m.find("### Full Skill Content:\n").expect("content heading") + "### Full Skill Content:\n".len();
            let end = m.rfind("\n---\n").expect("closing rule");
            (path, m[start..end].to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_librarian_finds_whole_skills_by_purpose() {
    let f = library();
    let client = f.connect().await;

    // Nothing indexed yet.
    let r = call(&client, "search_skills", json!({ "query": "anything" })).await;
    assert_eq!(text(&r), "No matching skills found.");

    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!(r["embedded"], 339, "{r}");
    // Broken skills are reported with the reason, and the run goes on.
    let errors = r["errors"].as_array().unwrap();
    let reason = |p: &str| errors.iter().find(|e| e["path"] == p).map(|e| e["error"].as_str().unwrap().to_string());
    assert!(reason("broken/SKILL.md").unwrap().starts_with("skipped: invalid YAML frontmatter"), "{r}");
    assert!(reason("plain/SKILL.md").unwrap().contains("no YAML frontmatter"), "{r}");
    assert_eq!(errors.len(), 2, "{r}");
    // One chunk per skill: the vector is the intent, the text the whole file.
    assert_eq!(r["chunks"], 339);
    // The broken ones are not "pending" forever: the status says why they are not indexed.
    let status = ok(&client, "get_embedding_status", json!({})).await;
    assert_eq!((&status["pending"]["total"], &status["up_to_date"]), (&json!(0), &json!(true)), "{status}");
    assert_eq!(status["not_indexed"]["count"], 2, "{status}");

    // Paraphrased purposes find their skill in the top 3.
    let mut hits = 0;
    let mut misses = Vec::new();
    for (query, wanted) in QUERIES {
        let answer = text(&call(&client, "search_skills", json!({ "query": query })).await);
        let found = matches(&answer);
        assert!(!found.is_empty() && found.len() <= 3, "{query}: {answer:.300}");
        let folder = |p: &str| p.trim_end_matches("/SKILL.md").rsplit('/').next().unwrap_or("").to_string();
        if found.iter().any(|(p, _)| wanted.contains(&folder(p).as_str())) {
            hits += 1;
        } else {
            misses.push(format!("{query} → {:?}", found.iter().map(|(p, _)| folder(p)).collect::<Vec<_>>()));
        }
    }
    let rate = hits as f64 / QUERIES.len() as f64;
    eprintln!("search_skills top-3 hit rate: {hits}/{} = {rate:.3}; misses: {misses:#?}", QUERIES.len());
    assert!(rate >= 0.8, "top-3 hit rate {rate:.3} below 0.8; misses: {misses:#?}");

    // A long skill (1,602 lines) comes back whole and byte-identical, with its metadata.
    let answer = text(
        &call(
            &client,
            "search_skills",
            json!({ "query": "lay out a research poster for a conference in LaTeX", "n_results": 5 }),
        )
        .await,
    );
    let path = "skills/K-Dense-AI+claude-scientific-skills/scientific-skills/latex-posters/SKILL.md";
    let (_, content) = matches(&answer)
        .into_iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} not found: {answer:.500}"));
    let original = std::fs::read_to_string(f.workspace.join(path)).unwrap();
    assert!(original.lines().count() >= 500);
    assert!(content == original, "the skill came back altered ({} vs {} bytes)", content.len(), original.len());
    let block = answer.split("\n## Match ").find(|m| m.contains(path)).unwrap();
    let relevance = block.split("(relevance: ").nth(1).and_then(|r| r.split(')').next()?.parse::<f64>().ok());
    assert!(relevance.is_some_and(|r| (0.0..=1.0).contains(&r)), "{block:.400}");
    assert!(block.contains("**Risk level**: unknown"), "{block:.400}");
    assert!(block.contains("**Files**: ") && block.contains("references/"), "siblings listed: {block:.600}");
    assert!(matches(&answer).len() <= 5);

    // n_results is capped at five, as seed 004 does; zero is an error.
    let answer = text(&call(&client, "search_skills", json!({ "query": "testing", "n_results": 50 })).await);
    assert_eq!(matches(&answer).len(), 5);
    assert!(is_error(&call(&client, "search_skills", json!({ "query": "testing", "n_results": 0 })).await));
    assert!(is_error(&call(&client, "search_skills", json!({ "query": "" })).await));

    // Re-indexing an unchanged library embeds nothing.
    let r = ok(&client, "embed_workspace", json!({})).await;
    assert_eq!((&r["embedded"], &r["skipped"]), (&json!(0), &json!(339)), "{r}");
    client.cancel().await.unwrap();

    // `ragbox index --skills DIR` indexes a library on its own: its skills only.
    let lib = f.workspace.join("skills/anthropics+skills");
    let mut index = f.command(&["index", "--skills", lib.to_str().unwrap(), "--json"]);
    if ragbox_tests::postgres_backend() {
        // Another workspace: its own collection.
        index.env("RAGBOX_COLLECTION", "anthropics-skills-library");
    }
    let out = index.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let in_lib = walk_count(&lib);
    assert_eq!((r["embedded"].as_u64(), r["chunks"].as_u64()), (Some(in_lib), Some(in_lib)), "{r}");
    if !ragbox_tests::postgres_backend() {
        assert!(lib.join(".ragbox/store.redb").exists());
    }
}

/// SKILL.md files under `dir`.
fn walk_count(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            n += walk_count(&path);
        } else if path.file_name().is_some_and(|f| f == "SKILL.md") {
            n += 1;
        }
    }
    n
}
