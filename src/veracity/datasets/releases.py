"""The catalogue's entries: each benchmark folder's public release (see `catalogue`).

Repository files are fetched raw at a commit whose file was checked (by length) against the
copy the loaders were written for; their pins are that copy's SHA-256. Comments name what
could not be pinned and why.
"""

from __future__ import annotations

from veracity.datasets.catalogue import GH, PUBLIC, SAME, Copy, Download, Entry, Place


def _raw(repo: str, commit: str, path: str, target: str, sha: str | None) -> tuple[Download, Place]:
    """A raw file of a GitHub repository at a commit, installed under `target`."""
    name = target.replace("/", "__")
    url = f"{GH}/{repo}/{commit}/{path}"
    return Download(url, name, sha, SAME if sha else ""), Place(target, name)


def _raws(*items: tuple[Download, Place]) -> dict[str, tuple]:
    return {"downloads": tuple(d for d, _ in items), "files": tuple(p for _, p in items)}


def _repo(folder: str, title: str, licence: str, size: str, repo: str, files: tuple) -> Entry:
    """An entry of raw repository files: (commit, path in the repository, target, sha256)."""
    raws = _raws(*(_raw(repo, c, path, target, sha) for c, path, target, sha in files))
    return Entry(folder, title, licence, size, f"https://github.com/{repo}", **raws)


_CC1, _CC2 = "cb7953f3c50ee455831360a497c5190349de19d9", "3ae70f8cac4df13a3ce56878e20d8e76790e422d"
_CHECK_COVID = (
    ("c89eea980d6233060306e9282b482b29130e78ce", "CheckCOVID/dev/covidCheck_dev_writtenAuth.json",
     "dev/covidCheck_dev_composed+extracted.json",
     "e64723a546c0ace6a6e1b022120664f36fe4c481e4a9f2d24e5dddc044bee717"),
    (_CC1, "covidCheck_dev.json", "dev/covidCheck_dev_composed.json",
     "ba71f3fdd6d48b2879374319a636e32c1b167835774f16fafab4e66dd7bac801"),
    (_CC2, "Check-COVID/dev/covidCheck_dev_extracted.json", "dev/covidCheck_dev_extracted.json",
     "c74fedf44f8446d52c93eafa7631c074796b0a1de47c981e931f15422eeacab5"),
    (_CC1, "covidCheck_train_writtenAuth.json", "train/covidCheck_train_composed+extracted.json",
     "1af4b5e364129631b49a9132cadcd4f1b4937c90bef22ba0c08242be1630858b"),
    (_CC2, "Check-COVID/train/covidCheck_train_composed.json",
     "train/covidCheck_train_composed.json",
     "7af449be57bd23c997816a4a55ec4f63594513db67c7eefa99b1d1eb6b85ca06"),
    (_CC1, "covidCheck_train_auth.json", "train/covidCheck_train_extracted.json",
     "77e336d0d6247cdfae3e5242e5eaa8223ea74885c977bb10cde0039675150585"),
    ("960a6247beec71b85d9cae4f26fa089a87ba147a", "corpus.json", "corpus.json",
     "2a56084b933f28ec02781a9e501082683ca4b9c4c1c6c8530190d6fb0002ce42"),
)  # fmt: skip
_SUB = "7284eefd1dcb164e9b97a53b28afd9cb4c9734c0"
_S3, _S4 = (
    "subtasks/subtask3_claim_evidence_stance.jsonl",
    "subtasks/subtask4_claim_factuality.jsonl",
)
_FACTCHECK_BENCH = (
    (_SUB, _S4, _S4, "b87f971ce324c87e0427f100fe24b50594b9d44e3a764490b1bef188917dbae1"),
    (_SUB, _S3, _S3, "3bfa17d7b37bca82bcc0aacf69a8bbd85cffe117d337c95cf7c3b00e34b98d1a"),
    ("726df3e8f16bdd26c0584bf3b571344fd7be7925", "factcheck-GPT-benchmark.jsonl",
     "factcheck-GPT-benchmark.jsonl",
     "8bbf41a58ee1b7431fecd2a23f231f764e378e04edeb4d2a7a83949a7f40cf4b"),
    ("ddfab3c8da7aaf56a84899972981e6af456b335f", "Factbench.jsonl", "Factbench.jsonl",
     "9ba867364f705ab37af202bc1c47528c8e143d159c4d217e813f0bf47e56e5bb"),
)  # fmt: skip
_FT = "e02bc8b16125feeb06409fefe346b18dfeab898e"
_FACTOOL = (
    (_FT, "datasets/knowledge_qa/knowledge_qa.jsonl", "knowledge_qa.jsonl",
     "5881926110f169c11090cd6370110353f1cb348cb0f13cd122f5a07e77b6b48f"),
    (_FT, "datasets/scientific/scientific.jsonl", "scientific.jsonl",
     "4b4d30672c746a8942386b6da129fda342968ab1367e18374793d3f802e1a1f6"),
)  # fmt: skip
_FIRE_HAND = (
    "FIRE's claim sets have no pinned public file here: download the `datasets` folder of "
    "https://github.com/mbzuai-nlp/fire (FIRE: Fact-checking with Iterative Retrieval and "
    "Verification) and put its bingcheck/, factcheckbench/, factool_qa/ and felm_wk/ "
    "folders in {path}, so that the loaders find {path}/bingcheck/data.jsonl, "
    "{path}/bingcheck/data_full.jsonl, {path}/bingcheck/bingcheck.jsonl, "
    "{path}/factcheckbench/data.jsonl, {path}/factool_qa/data.jsonl and "
    "{path}/felm_wk/data.jsonl"
)

CLAIM_SETS: tuple[Entry, ...] = (
    Entry(
        "scifact", "SciFact (Wadden et al., EMNLP 2020)", "claims CC BY 4.0; abstracts ODC-By 1.0",
        "3.1 MB download, 8.5 MB installed", "https://github.com/allenai/scifact",
        downloads=(Download(
            "https://scifact.s3-us-west-2.amazonaws.com/release/latest/data.tar.gz", "data.tar.gz",
            "11c621288d41ac144d29b13b0f8503b3820b7d6e8b1f6ff24dff335c196d76be", PUBLIC, 3_115_079,
        ),),
        files=tuple(
            Place(n, "data.tar.gz", f"data/{n}")
            for n in ("corpus.jsonl", "claims_train.jsonl", "claims_dev.jsonl")
        ),
    ),
    Entry(
        "liar", "LIAR (Wang, ACL 2017)", "research use only (README in the archive)",
        "1.0 MB download, 2.9 MB installed", "https://www.cs.ucsb.edu/~william/data/",
        downloads=(Download(
            "https://www.cs.ucsb.edu/~william/data/liar_dataset.zip", "liar_dataset.zip",
            "611c1addad919743dde15822b87a60bfb760d8f85597f25289e34621800654c7", PUBLIC, 1_013_571,
        ),),
        files=tuple(
            Place(n, "liar_dataset.zip", n)
            for n in ("train.tsv", "valid.tsv", "test.tsv", "README")
        ),
    ),
    _repo("liar_plus", "LIAR-PLUS (Alhindi et al., FEVER 2018)", "CC0 1.0", "1.0 MB",
          "Tariq60/LIAR-PLUS", (("f77f6e5c7fc72cecf2b5a754d0c1be4e1e3606b7",
          "dataset/jsonl/val2.jsonl", "val2.jsonl",
          "70679e4054c1f1889678b10a3168c9c33bd0e706c7577d434b3188d44cd5e6b7"),)),
    # only the first 250 dev claims were at hand to compare: no checksum of the whole file
    _repo("averitec", "AVeriTeC (Schlichtkrull et al., NeurIPS 2023), dev", "CC BY-NC 4.0",
          "1.8 MB", "MichSchli/AVeriTeC", (("2178d0bbe0103f40eba2b0f3555f0e15df146052",
          "data/dev.json", "dev.json", None),)),
    # the release's main branch (no commit of this file could be confirmed), not pinned
    _repo("hover", "HoVer (Jiang et al., Findings of EMNLP 2020), dev", "MIT (repository)",
          "1.6 MB", "hover-nlp/hover", (("main", "data/hover/hover_dev_release_v1.1.json",
          "hover_dev_release_v1.1.json", None),)),
    _repo("check_covid", "Check-COVID (Wang et al., Findings of ACL 2023)", "MIT", "1.4 MB",
          "posuer/Check-COVID", _CHECK_COVID),
    _repo("covidfact", "COVID-Fact (Saakyan et al., ACL 2021)", "not stated", "3.1 MB",
          "asaakyan/covidfact", (("20646ded0325e58aa5fe741199b44155ab3efb7b",
          "COVIDFACT_dataset.jsonl", "COVIDFACT_dataset.jsonl",
          "9d4974209ffc872566111ce7ed2fbd422245c3dba2a5ec30de61af38f061c7e3"),)),
    _repo("climate_fever", "Climate-FEVER (Diggelmann et al., 2020)", "not stated", "3.2 MB",
          "tdiggelm/climate-fever-dataset", (("336f0a46c98920a6f40926385ce71ba877a7b863",
          "dataset/climate-fever.jsonl", "climate-fever.jsonl",
          "8a4b9032d861be482ffb49dddfd283ffa6089e654f1e968040011882c5eb6e0b"),)),
    _repo("feverous_s", "FEVEROUS-S as released with ProgramFC (Pan et al., ACL 2023)",
          "MIT (ProgramFC release)", "2.0 MB", "teacherpeterpan/ProgramFC",
          (("2601070da7ebd96f0e025f3440be0744ad267d4c", "datasets/FEVEROUS/claims/dev.json",
          "dev.json", "ace38f60e2fee1e6cbd1254bc10d22f57cd3502e8b9b1a704fbbeccbc1577325"),)),
    _repo("factcheck_bench", "Factcheck-GPT / Factcheck-Bench (Wang et al., 2024)",
          "Apache-2.0", "9.0 MB", "yuxiaw/Factcheck-GPT", _FACTCHECK_BENCH),
    _repo("factool", "FacTool (Chern et al., 2023): knowledge-QA and scientific sets",
          "Apache-2.0", "0.2 MB", "GAIR-NLP/factool", _FACTOOL),
    Entry("fire_claimsets", "FIRE's claim sets (BingCheck, FactCheck-Bench, FacTool-QA, FELM-WK)",
          "not stated", "1.4 MB", "https://github.com/mbzuai-nlp/fire", manual=_FIRE_HAND),
)  # fmt: skip

_MM = "CYP0630/MERMAID-For-Reviwe-Phase"
_MM_SETS, _MM_RUNS = (
    "5facc2deeedc357221bfa98ce3f231d2abbaa3f9",
    "b441efb9f5575b2df8173e606e77006c09ef9d32",
)
_MM_FILES = (
    ("dataset/HoVerDev/processed/two_hop_df_new.jsonl", "sets/HoVerDev_two_hop_df_new.jsonl",
     "3144e01e60b8e18eb89e101a2380564a57ec7ca333215ca5367b3095ea70d7b5"),
    ("dataset/HoVerDev/processed/three_hop_df_new.jsonl", "sets/HoVerDev_three_hop_df_new.jsonl",
     "2d668f3101aea95481e3a3d95845ca0f554e7bdc25d45e4a1943ec470a72e889"),
    ("dataset/HoVerDev/processed/four_hop_df_new.jsonl", "sets/HoVerDev_four_hop_df_new.jsonl",
     "6a1f4213469b8101fc97d7d2f0f6073bfb13a82364b1a951dafcd61a39024de4"),
    ("dataset/SciFact-Open/processed/df_new.jsonl", "sets/SciFact-Open_df_new.jsonl",
     "d26303ff5dd399d3d22e3895b41208668ddaae5279b9c84d51c64d7f2244e927"),
    ("dataset/factool_qa/data.jsonl", "sets/factool_qa_data.jsonl",
     "a1a2710fb1acb7a9572bac04336f9baada6c7d59551cb3e468311d94a7501075"),
)  # fmt: skip
_MM_TRACES = (
    ("factool_qa_gpt-4o.json", "0156edd82d5a2f9a4e78ee7832d6a109a3e1eff05e8e9c2602c6845aa9183270"),
    ("bingcheck_gpt-4o.json", "c76458c1a606f1e7345e78da45204068c32da7225a311927fa0c77a550faf64b"),
    ("factcheckbench_gpt-4o.json",
     "7fb9467bd99f0904a9d700478b89c6b12cfd75d7e919b6d026f455971f20176d"),
)  # fmt: skip
_FIRE_SAME = (
    ("sets/bingcheck_data.jsonl", "bingcheck/data.jsonl",
     "79419cf23d968fabd6d6f300593c6e998a63332107f58019bb521b49e809b24c"),
    ("sets/factcheckbench_data.jsonl", "factcheckbench/data.jsonl",
     "5f5eae40e7d124d0c70498817347bb6d9638d33dac02d2d69de4c86263c5d268"),
)  # fmt: skip

_NEWS_HAND = "{what} Save {files}."  # `files` names each file's full path, {path}/NAME

OTHER_SETS: tuple[Entry, ...] = (
    Entry(
        "mermaid_eval_sets",
        "MERMAID's evaluation subsets and recorded GPT-4o traces",
        "not stated",
        "2.1 MB",
        f"https://github.com/{_MM}",
        **_raws(
            *(_raw(_MM, _MM_SETS, src, dst, sha) for src, dst, sha in _MM_FILES),
            *(
                _raw(_MM, _MM_RUNS, f"results/{name}", f"recorded_gpt4o_traces/{name}", sha)
                for name, sha in _MM_TRACES
            ),
        ),
        # MERMAID's BingCheck and FactCheck-Bench subsets are FIRE's files, byte for byte
        copies=tuple(Copy(dst, "fire_claimsets", src, sha) for dst, src, sha in _FIRE_SAME),
    ),
    Entry(
        "sheepdog_politifact",
        "SheepDog's PolitiFact articles (Wu et al., KDD 2024; from FakeNewsNet)",
        "not stated",
        "about 3 MB",
        "https://github.com/jiayingwu19/SheepDog",
        downloads=(
            Download(
                f"{GH}/jiayingwu19/SheepDog/4c352715ec7daf1aaf96c6da0c2de979a5440b6e/"
                "data/news_articles/politifact_train.pkl",
                "politifact_train.pkl",
            ),
        ),
        convert="sheepdog_articles",
        outputs=("politifact_train.jsonl",),
    ),
    Entry(
        "rumoureval2017",
        "RumourEval 2017 (SemEval-2017 Task 8) training and development threads",
        "annotations CC BY 4.0; tweet text under platform terms",
        "size not recorded (one archive of tweet JSON files)",
        "https://alt.qcri.org/semeval2017/task8/",
        downloads=(
            Download(
                "https://s3-eu-west-1.amazonaws.com/downloads.gate.ac.uk/pheme/"
                "semeval2017-task8-dataset.tar.bz2",
                "semeval2017-task8-dataset.tar.bz2",
            ),
        ),
        convert="rumoureval_threads",
        outputs=("threads_train_dev.jsonl",),
    ),
    Entry(
        "politifact_plusplus",
        "PolitiFact++ (Su et al., 2023)",
        "not stated",
        "4.4 MB",
        "https://github.com/JinyanSu1/Fakenews-dataset",
        manual=_NEWS_HAND.format(
            what="No pinned file could be confirmed: download HF.json, HR.json, MF.json and "
            "MR.json from https://github.com/JinyanSu1/Fakenews-dataset/tree/main/Dataset/"
            "PolitiFact%2B%2B (the authors' release; also on Hugging Face as Jinyan1/PolitiFact).",
            files="them as {path}/HF.json, {path}/HR.json, {path}/MF.json and {path}/MR.json",
        ),
    ),
    Entry(
        "gossipcop_text_subset",
        "GossipCop article texts (FakeNewsNet, Shu et al., 2020)",
        "not stated",
        "2.6 MB",
        "https://github.com/KaiDMML/FakeNewsNet",
        manual=_NEWS_HAND.format(
            what="No public release of GossipCop's article texts could be confirmed: "
            "FakeNewsNet (https://github.com/KaiDMML/FakeNewsNet) publishes URLs and titles, "
            "and its crawler fetches the texts. Write them as a CSV with the columns "
            "id,title,content,label (label fake or real).",
            files="it as {path}/gossipcop_first2000.csv",
        ),
    ),
    Entry(
        "politifact_hidden",
        "PolitiFact-Hidden (TRACER), test claims",
        "not stated",
        "0.2 MB",
        "https://github.com/ZhangYirui10/TRACER_ANON",
        manual=_NEWS_HAND.format(
            what="The benchmark's files (the data/ folder of "
            "https://github.com/ZhangYirui10/TRACER_ANON, released for review) could not "
            "be confirmed: take its test split and write one JSON object a line, "
            '{{"id", "claim", "label"}} with label TRUE, HALF-TRUE or FALSE.',
            files="it as {path}/test_claims_first1000.jsonl",
        ),
    ),
    Entry(
        "advfact",
        "AdvFact (ToE's adversarial set, built from LIAR)",
        "derived from LIAR (research use only)",
        "built locally",
        "https://www.cs.ucsb.edu/~william/data/liar_dataset.zip",
        build="veracity advfact build",
    ),
)

ENTRIES: tuple[Entry, ...] = CLAIM_SETS + OTHER_SETS
