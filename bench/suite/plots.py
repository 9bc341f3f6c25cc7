"""The benchmark suite's PNG plots, one set per table (bench/README.md, "The suite")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from systems import BY_KEY, FAMILIES, FAMILY, PP, PS, RR, SIZES, SYSTEMS, Row, size_name


def row_order(k: tuple[str, str]) -> tuple[int, int]:
    """Systems in SYSTEMS order, and their transports in the order each lists them."""
    s = BY_KEY[k[0]]
    return [x.key for x in SYSTEMS].index(s.key), s.transports.index(k[1])


def plots(table: list[Row], out: Path, title: str, prefix: str = "") -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    colours = {
        "quinn-stream": "dimgray",
        "quinn-long": "black",
        "framed-tcp": "black",
        "framed-unix": "black",
        "tokio-mpsc": "black",
        "weida": "tab:red",
        "weida-py": "tab:orange",
        "weida-py batch": "gold",
        "weida-node": "tab:green",
        "weida-node window": "yellowgreen",
        "weida-node batch": "olive",
        "pyzmq": "tab:blue",
        "pyzmq asyncio": "lightskyblue",
        "zeromq.js": "tab:purple",
        "pynng": "tab:brown",
        "zenoh": "tab:cyan",
    }
    styles = {"substrate": ":", "weida": "-", "other": "--"}

    def yerr(rs: list[Row], scale: Callable[[Row], float]) -> list[list[float]]:
        lo = [(r.value["median"] - r.value["min"]) * scale(r) if r.value else 0 for r in rs]
        hi = [(r.value["max"] - r.value["median"]) * scale(r) if r.value else 0 for r in rs]
        return [lo, hi]

    # Push/Pull: msgs/s and MB/s against size, one panel per transport family.
    pp = [r for r in table if r.case.pattern == PP and r.value]
    for unit, scale, fname in (
        ("msgs/s", lambda r: 1.0, "push_pull_msgs.png"),
        ("MB/s", lambda r: r.case.size / 1e6, "push_pull_mbps.png"),
    ):
        if not pp:
            break
        fig, axes = plt.subplots(2, 2, figsize=(14, 10), sharex=True)
        for ax, fam in zip(axes.flat, FAMILIES, strict=True):
            lines = sorted(
                {(r.system.key, r.transport) for r in pp if FAMILY[r.transport] == fam},
                key=lambda k: [s.key for s in SYSTEMS].index(k[0]),
            )
            for sk, t in lines:
                rs = sorted(
                    (r for r in pp if (r.system.key, r.transport) == (sk, t)),
                    key=lambda r: r.case.size,
                )
                xs = [r.case.size for r in rs]
                ys = [r.value["median"] * scale(r) for r in rs if r.value]
                ax.errorbar(
                    xs,
                    ys,
                    yerr=yerr(rs, scale),
                    label=f"{sk} ({t})",
                    color=colours.get(sk, "gray"),
                    linestyle=styles[BY_KEY[sk].kind],
                    marker="o",
                    capsize=3,
                    linewidth=2 if BY_KEY[sk].kind == "weida" else 1.2,
                )
            ax.set_title(f"Push/Pull over {fam}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(list(SIZES), [size_name(s) for s in SIZES])
            ax.set_ylabel(unit)
            ax.grid(True, which="both", alpha=0.3)
            if lines:
                ax.legend(fontsize=7)
        fig.suptitle(f"Push/Pull {unit}, median and min–max over the repetitions ({title})")
        fig.tight_layout()
        fig.savefig(out / (prefix + fname), dpi=90)
        plt.close(fig)
        made.append(prefix + fname)

    # Req/Rep: p50 bars, p99 markers.
    rr = [r for r in table if r.case.pattern == RR and r.value]
    if rr:
        fig, ax = plt.subplots(figsize=(11, max(4, 0.32 * len(rr) + 1)))
        ys = list(range(len(rr)))
        ax.barh(
            ys,
            [r.value["median"] for r in rr],
            xerr=yerr(rr, lambda r: 1.0),
            color=[colours.get(r.system.key, "gray") for r in rr],
            capsize=3,
            label="p50",
        )
        ax.scatter(
            [r.p99["median"] if r.p99 else 0 for r in rr],
            ys,
            marker="|",
            s=200,
            color="black",
            label="p99",
            zorder=3,
        )
        ax.set_yticks(ys, [f"{r.system.key} ({r.transport})" for r in rr], fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("round trip, µs (log)")
        ax.set_title(f"Req/Rep 64 B: p50 (bars, min–max) and p99 (|) ({title})")
        ax.grid(True, axis="x", which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / (prefix + "req_rep.png"), dpi=90)
        plt.close(fig)
        made.append(prefix + "req_rep.png")

    # Pub/Sub: copies/s per system and transport, one bar per case.
    ps = [r for r in table if r.case.pattern == PS]
    if ps:
        keys = sorted(
            {(r.system.key, r.transport) for r in ps},
            key=row_order,
        )
        pcases = sorted({r.case for r in ps}, key=lambda c: (c.size, c.width))
        fig, ax = plt.subplots(figsize=(14, 6))
        width = 0.8 / max(1, len(pcases))
        by = {(r.case, r.system.key, r.transport): r for r in ps}
        for i, c in enumerate(pcases):
            xs = [k + i * width for k in range(len(keys))]
            rs = [by.get((c, *k)) for k in keys]
            ax.bar(
                xs,
                [r.value["median"] if r and r.value else 0 for r in rs],
                width,
                label=c.name().removeprefix("pub_sub "),
            )
        ax.set_xticks(
            [k + 0.4 - width / 2 for k in range(len(keys))],
            [f"{k[0]} ({k[1]})" for k in keys],
            fontsize=8,
            rotation=45,
            ha="right",
        )
        ax.set_yscale("log")
        ax.set_ylabel("copies/s (log)")
        ax.set_title(f"Pub/Sub copies/s, medians ({title})")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / (prefix + "pub_sub.png"), dpi=90)
        plt.close(fig)
        made.append(prefix + "pub_sub.png")

    # weida ÷ its ceiling, every weida row.
    wr = [r for r in table if r.system.kind == "weida" and r.case.pattern == PP and r.vs_ceiling]
    if wr:
        keys = sorted(
            {(r.system.key, r.transport) for r in wr},
            key=row_order,
        )
        fig, ax = plt.subplots(figsize=(14, 6))
        width = 0.8 / len(SIZES)
        by = {(r.case.size, r.system.key, r.transport): r for r in wr}
        for i, size in enumerate(SIZES):
            xs = [k + i * width for k in range(len(keys))]
            vals = [
                (by[(size, *k)].vs_ceiling or {}).get("median", 0) if (size, *k) in by else 0
                for k in keys
            ]
            ax.bar(xs, vals, width, label=size_name(size))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(
            [k + 0.4 - width / 2 for k in range(len(keys))],
            [f"{k[0]} ({k[1]})" for k in keys],
            fontsize=8,
            rotation=45,
            ha="right",
        )
        ax.set_yscale("log")
        ax.set_ylabel("msgs/s ÷ ceiling (log; 1 = the bare substrate)")
        ax.set_title(
            "Push/Pull: weida ÷ its substrate ceiling (quinn long stream, framed unix, "
            f"tokio mpsc) ({title})"
        )
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / (prefix + "weida_vs_ceiling.png"), dpi=90)
        plt.close(fig)
        made.append(prefix + "weida_vs_ceiling.png")
    return made
