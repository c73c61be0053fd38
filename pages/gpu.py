"""GPU monitor: VRAM, utilisation and power while a model answers, and where Ollama put its models.

UI only: the sampler and the placement advice come from rag.gpu, the phases from
rag.llms.telemetry, the watched generation and its model choices from rag.generate.watch.
"""

from __future__ import annotations

import time
from datetime import datetime

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from rag import gpu
from rag.errors import RagError
from rag.generate.watch import GenerationView, WatchedGeneration, watch_choices
from rag.gpu.placement import unloads_in
from rag.llms import resolve_chat_model
from rag.llms.choice import default_local_name
from rag.llms.ollama.admin import unload_model
from rag.llms.telemetry import PHASE_TITLES, Mark
from rag.model_ref import ModelRef, shown_name
from ui import resources
from ui.format import no_images
from ui.i18n import _, chart_config, columns, tr

# (Comments, not docstrings: Streamlit's magic would draw a bare string on the page.)
REFRESH_SECONDS = 1.0  # how often the live charts are redrawn; the sampler samples every 0.5 s
PLACEMENT_REFRESH_SECONDS = 3.0
WINDOWS = {"1 min": 60, "2 min": 120, "5 min": 300, "10 min": 600}
PHASE_COLOURS = {
    "load": "#8e6bbf",
    "prompt": "#f28e2b",
    "thinking": "#76b7e0",
    "output": "#59a14f",
    "generating": "#b0b0b0",
}
GENERATION = "gpu_generation"
DEFAULT_PROMPT = "Explain in three short paragraphs how a GPU speeds up a language model."
GIB = 1024**3
MIB = 1024**2
LABEL_GAP = 0.15  # share of the window within which generation labels are merged


def when(t: float) -> datetime:
    return datetime.fromtimestamp(t)


def fmt(value: float | int | None, unit: str = "", scale: float = 1.0, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value / scale:.{digits}f}{unit}"


def unload(host: str, name: str) -> None:
    try:
        unload_model(host, name)
        st.session_state["gpu_unload_msg"] = (True, _("Asked Ollama to unload {name}: watch VRAM drop.", name=name))
    except RagError as exc:
        st.session_state["gpu_unload_msg"] = (False, tr(exc))


def model_label(choice: str) -> str:
    """The model box's label of `choice`, in the user's language (call it in the script run)."""
    if choice == resources.LOCAL:
        return _("{model} · embedded, on the CPU", model=ModelRef.parse(default_local_name()).name)
    return _("{model} · Ollama", model=ModelRef.parse(choice, bare="ollama").name)


def start_generation() -> None:
    choice = st.session_state.get("gpu_model") or ""
    prompt = st.session_state.get("gpu_prompt") or ""
    old = st.session_state.get(GENERATION)
    if old is not None and old.running:
        return
    try:
        model = resolve_chat_model(resources.settings(), choice)
        st.session_state[GENERATION] = WatchedGeneration(model, prompt).start()
        st.session_state.pop("gpu_generate_error", None)
    except (RagError, ValueError) as exc:
        st.session_state["gpu_generate_error"] = tr(exc)


def stop_generation() -> None:
    current = st.session_state.get(GENERATION)
    if current is not None:
        current.stop()


# ------------------------------------------------------------------------------------------------
# Drawing


def add_marks(
    fig: go.Figure, marks: list[Mark], running: GenerationView | None, now: float, rows: int, window: float
) -> None:
    """Each phase a shaded span across every chart; the phases in the legend; each generation's
    label once, where it starts."""
    spans = [(m.phase, m.start, m.end, m.label) for m in marks]
    if running is not None and running.running:
        spans.append(("generating", running.started_at, now, shown_name(running.model)))
    for phase, start, end, _label in spans:
        end = max(end, start + 0.05)  # a 1 ms model load is still worth seeing
        for row in range(1, rows + 1):
            fig.add_vrect(
                x0=when(start),
                x1=when(end),
                fillcolor=PHASE_COLOURS.get(phase, "#cccccc"),
                opacity=0.22,
                line_width=0,
                layer="below",
                row=row,
                col=1,
            )
    for phase in dict.fromkeys(phase for phase, *_rest in spans):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=tr(PHASE_TITLES.get(phase, phase)),
                legendgroup="phases",
                marker={"symbol": "square", "size": 12, "opacity": 0.5, "color": PHASE_COLOURS.get(phase, "#cccccc")},
            ),
            row=1,
            col=1,
        )
    starts: dict[str, float] = {}
    for _phase, start, _end, label in spans:
        starts[label] = min(start, starts.get(label, start))
    # Labels of generations that start close together share one annotation rather than overprint.
    groups: list[tuple[float, list[str]]] = []
    for label, start in sorted(starts.items(), key=lambda item: item[1]):
        if groups and start - groups[-1][0] < LABEL_GAP * window:
            groups[-1][1].append(label)
        else:
            groups.append((start, [label]))
    for start, labels in groups:
        text = " · ".join(tr(label) for label in labels)
        near_the_end = now - start < 0.3 * window  # written leftwards, so it is not cut off
        fig.add_annotation(
            x=when(start),
            y=1.0,
            xref="x",
            yref="y domain",
            text=text,
            hovertext=text,
            showarrow=False,
            xanchor="right" if near_the_end else "left",
            yanchor="bottom",
            font={"size": 10},
        )


def build_figure(
    samples: list[gpu.Sample],
    status: gpu.GpuStatus,
    marks: list[Mark],
    running: GenerationView | None,
    start: float,
    now: float,
) -> go.Figure:
    times = [when(s.t) for s in samples]
    if status.available:
        titles = (_("VRAM (GiB)"), _("Utilisation (%)"), _("Power (W)"), "CPU (%)")
    else:
        titles = ("CPU (%)", _("RAM (GiB)"))
    fig = make_subplots(rows=len(titles), cols=1, shared_xaxes=True, vertical_spacing=0.06, subplot_titles=titles)

    def line(
        row: int, name: str, values: list[float | None], dash: str | None = None, colour: str | None = None
    ) -> None:
        fig.add_trace(
            go.Scatter(
                x=times,
                y=values,
                name=name,
                mode="lines",
                line={"dash": dash, "color": colour, "width": 1.6},
                connectgaps=False,
            ),
            row=row,
            col=1,
        )

    def scaled(value: float | int | None, by: float) -> float | None:
        return None if value is None else value / by

    if status.available:
        for info in status.devices:
            tag = f"GPU {info.index} " if len(status.devices) > 1 else ""

            def device(s: gpu.Sample, index: int = info.index) -> gpu.DeviceSample | None:
                return next((d for d in s.devices if d.index == index), None)

            devs = [device(s) for s in samples]
            line(1, tag + _("VRAM used"), [scaled(d.memory_used, GIB) if d else None for d in devs])
            line(1, tag + _("VRAM total"), [scaled(d.memory_total, GIB) if d else None for d in devs], "dot", "#888")
            ollama = [
                sum(p.gpu_memory or 0 for p in s.processes if p.device == info.index and p.is_ollama) for s in samples
            ]
            if any(ollama):
                line(1, tag + _("VRAM held by Ollama"), [v / GIB for v in ollama], "dash")
            line(2, tag + _("GPU util"), [d.gpu_util if d else None for d in devs])
            line(2, tag + _("memory util"), [d.memory_util if d else None for d in devs], "dash")
            line(3, tag + _("power draw"), [d.power_draw if d else None for d in devs])
            line(3, tag + _("power limit"), [d.power_limit if d else None for d in devs], "dot", "#888")
        line(4, "CPU", [s.host.cpu_percent if s.host else None for s in samples])
        fig.update_yaxes(range=[0, 100], row=2, col=1)
        fig.update_yaxes(range=[0, 100], row=4, col=1)
    else:
        line(1, "CPU", [s.host.cpu_percent if s.host else None for s in samples])
        line(2, _("RAM used"), [scaled(s.host.ram_used, GIB) if s.host else None for s in samples])
        line(2, _("RAM total"), [scaled(s.host.ram_total, GIB) if s.host else None for s in samples], "dot", "#888")
        fig.update_yaxes(range=[0, 100], row=1, col=1)
    add_marks(fig, marks, running, now, len(titles), now - start)
    # The time of day alone: Plotly's date ticks and hover name the month in English ("Dec 6, 2026"), in the Chinese
    # UI too, and a window of minutes needs no date.
    fig.update_xaxes(range=[when(start), when(now)], tickformat="%H:%M:%S", hoverformat="%H:%M:%S")
    fig.update_layout(
        height=190 * len(titles) + 60,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "y": -0.08},
        uirevision="gpu-live",
    )
    return fig


def device_metrics(latest: gpu.Sample | None, status: gpu.GpuStatus) -> None:
    if latest is None:
        st.caption(_("Collecting the first samples…"))
        return
    cells: list[tuple[str, str]] = []
    if status.available:
        for d in latest.devices:
            if d.error:
                continue  # said at the top of the page
            tag = f" · GPU {d.index}" if len(latest.devices) > 1 else ""
            cells += [
                (_("VRAM") + tag, f"{fmt(d.memory_used, '', GIB, 1)} / {fmt(d.memory_total, ' GiB', GIB, 1)}"),
                (_("GPU util") + tag, fmt(d.gpu_util, " %")),
                (_("Memory util") + tag, fmt(d.memory_util, " %")),
                (_("Temperature") + tag, fmt(d.temperature, " °C")),
                (_("Power") + tag, f"{fmt(d.power_draw)} / {fmt(d.power_limit, ' W')}"),
                (_("Clocks (MHz)") + tag, f"{fmt(d.clock_graphics)} / {fmt(d.clock_memory)}"),
            ]
    if latest.host is not None:
        cells += [
            ("CPU", f"{latest.host.cpu_percent:.0f} %"),
            (_("RAM (GiB)"), f"{latest.host.ram_used / GIB:.1f} / {latest.host.ram_total / GIB:.1f}"),
        ]
    for row in range(0, len(cells), 4):
        cols = st.columns(4)
        for col, (label, value) in zip(cols, cells[row : row + 4]):
            col.metric(label, value)


def process_table(latest: gpu.Sample | None, status: gpu.GpuStatus) -> None:
    if not status.available or latest is None:
        return
    st.markdown(_("**Processes on the GPU**"))
    cannot = [f"GPU {i}" for i, reading in status.unsupported if reading == "compute_processes"]
    if cannot:
        st.caption(_("NVML cannot list processes on {gpus} (“Not Supported”).", gpus=", ".join(cannot)))
    if not latest.processes:
        st.caption(
            _(
                "No process holds GPU memory now. (Inside a container, programs of other containers "
                "are listed without a name, or not at all.)"
            )
        )
        return
    rows = sorted(latest.processes, key=lambda p: (not p.is_ollama, -(p.gpu_memory or 0)))
    table = pd.DataFrame(
        {
            "GPU": [p.device for p in rows],
            "PID": [p.pid for p in rows],
            "Process": [p.name or "(not visible from here)" for p in rows],
            "VRAM (MiB)": [None if p.gpu_memory is None else round(p.gpu_memory / MIB) for p in rows],
            "Ollama": [p.is_ollama for p in rows],
        }
    )
    styled = table.style.apply(
        lambda row: ["background-color: #e6f4ea; font-weight: 600" if row["Ollama"] else "" for _cell in row], axis=1
    )
    st.dataframe(styled, hide_index=True, key="gpu_processes", column_config=columns(table))


def generation_panel(view: GenerationView, now: float) -> None:
    ref = ModelRef.parse_or_none(view.model)  # a chat model's name says its provider
    model = ref.name if ref is not None and ref.name else view.model
    if view.running:
        st.caption(_("Generating with {model}… {s} s", model=model, s=f"{now - view.started_at:.1f}"))
    if view.thinking:
        with st.expander(_("Thinking"), expanded=False):
            st.markdown(no_images(view.thinking))
    if view.text:
        with st.container(border=True):
            st.markdown(no_images(view.text))
    if view.error:
        st.error(tr(view.error), icon="⚠️")
    stats = view.stats
    if not view.running and (stats is not None or view.first_token_at is not None):
        cols = st.columns(5)
        cols[0].metric(_("Time to first token"), fmt(view.time_to_first_token, " s", digits=2))
        cols[1].metric(_("Tokens/s"), fmt(view.tokens_per_second, "", digits=1))
        cols[2].metric(_("Load time"), fmt(view.load_seconds, " s", digits=2))
        prompt_count = stats.prompt_eval_count if stats else None
        cols[3].metric(
            _("Prompt eval ({n} tokens)", n=fmt(prompt_count)),
            fmt(stats.prompt_tokens_per_second if stats else None, " tok/s"),
        )
        cols[4].metric(_("Output tokens"), fmt(stats.eval_count if stats else None))
        if stats is not None and stats.done_reason == "stopped" and ref is not None and ref.is_ollama:
            st.caption(
                _(
                    "Stopped: Ollama sends no timings for a stopped answer, so load and prompt evaluation "
                    "are drawn as one span up to the first token."
                )
            )


# ------------------------------------------------------------------------------------------------
# The page


def header(status: gpu.GpuStatus) -> None:
    st.title(_("GPU monitor"))
    if status.devices:  # found, even if one has failed since
        names = ", ".join(f"**{d.name}**" for d in status.devices)
        st.markdown(
            _(
                "{names} · driver {driver} · CUDA {cuda}",
                names=names,
                driver=status.driver or "?",
                cuda=status.cuda or "?",
            )
        )
    else:
        st.info(
            _(
                "No NVIDIA GPU is visible to this app. NVML says: “{reason}” ({hint}). Models run on the CPU here, "
                "so CPU and RAM are shown instead.",
                reason=tr(status.reason),
                hint=tr(gpu.no_gpu_hint(status.reason)),
            ),
            icon="ℹ️",
        )


@st.fragment(run_every=PLACEMENT_REFRESH_SECONDS)
def placement(host: str, watch: gpu.GpuSampler) -> None:
    st.subheader(_("Where Ollama put its models"))
    message = st.session_state.pop("gpu_unload_msg", None)
    if message is not None:
        (st.success if message[0] else st.error)(tr(message[1]))
    report = gpu.ollama_placement(host, watch.status, watch.latest())
    models = report.models
    if models is None:
        st.info(
            _("Ollama is not reachable at {host}: start it ('ollama serve') or set OLLAMA_HOST.", host=host), icon="ℹ️"
        )
        return
    if not models:
        st.caption(_("Ollama holds no model in memory now: generate below to load one."))
        return
    advice = report.advice
    if advice is None:
        st.success(
            _("All models run 100% on the GPU.") if len(models) > 1 else _("The model runs 100% on the GPU."), icon="✅"
        )
    elif advice.severity == "error":
        causes = "\n".join(f"{i}. {tr(c)}" for i, c in enumerate(advice.causes, 1))
        st.error(f"**{tr(advice.title)}**\n\n" + _("Likely causes and how to check:") + f"\n\n{causes}", icon="🚨")
    else:
        st.info(tr(advice.title), icon="ℹ️")
    now = datetime.now().astimezone()
    table = pd.DataFrame(
        {
            "Model": [m.name for m in models],
            "Size (GiB)": [round(m.size / GIB, 2) for m in models],
            "In VRAM (GiB)": [round(m.size_vram / GIB, 2) for m in models],
            "Placement": [m.share_on_gpu for m in models],
            "Context": [m.context_length for m in models],
            "Unloads in": [tr(unloads_in(m.expires_at, now)) for m in models],
        }
    )
    st.dataframe(table, hide_index=True, key="gpu_placement", column_config=columns(table))
    st.caption(_("Keep-alive: unload a model now (keep_alive 0) and watch VRAM drop on the chart."))
    cols = st.columns(min(len(models), 4))
    for i, m in enumerate(models):
        cols[i % len(cols)].button(
            _("Unload {model}", model=m.name), key=f"gpu_unload_{m.name}", on_click=unload, args=(host, m.name)
        )


def monitor(watch: gpu.GpuSampler, can_generate: bool, window_label: str | None) -> None:
    """The generation and the live charts (run as a fragment: redrawn every REFRESH_SECONDS while Live)."""
    current: WatchedGeneration | None = st.session_state.get(GENERATION)
    running = current is not None and current.running
    if can_generate:
        b1, b2, _spare = st.columns([1, 1, 4])
        b1.button(_("Generate"), key="gpu_generate", type="primary", disabled=running, on_click=start_generation)
        b2.button(_("Stop"), key="gpu_stop", disabled=not running, on_click=stop_generation)
        current = st.session_state.get(GENERATION)
    for problem in watch.status.problems:  # here, so that a GPU lost while watching shows at once
        st.error(f"{problem}. " + _("NVML can no longer read it: reset the GPU or reboot."), icon="🚨")
    now = time.time()
    view = current.view() if current is not None else None
    if view is not None:
        generation_panel(view, now)
    now = time.time()
    span = WINDOWS.get(window_label or "2 min", 120)
    start = now - span
    samples = watch.samples(since=start)
    latest = watch.latest()
    device_metrics(latest, watch.status)
    fig = build_figure(samples, watch.status, watch.marks(since=start), view, start, now)
    st.plotly_chart(fig, key="gpu_chart", config=chart_config())
    st.caption(
        _(
            "Shaded spans: the phases of generations (this page's and the chat's): model load, prompt "
            "evaluation, thinking, output."
        )
    )
    process_table(latest, watch.status)


def main() -> None:
    host = resources.settings().ollama_host
    watch = resources.gpu_sampler(gpu.selected_nvml())
    header(watch.status)
    placement(host, watch)

    st.subheader(_("Generate while watching"))
    offered = watch_choices(host, resources.local_model_available())
    choices = list(offered.choices)
    if offered.note:
        st.caption(tr(offered.note))
    if choices:
        labels = {c: model_label(c) for c in choices}  # made in the run: AppTest calls format_func outside it
        st.selectbox(_("Model"), choices, key="gpu_model", format_func=labels.__getitem__)
        st.text_area(_("Prompt"), _(DEFAULT_PROMPT), key="gpu_prompt", height=80)
    if "gpu_generate_error" in st.session_state:
        st.error(st.session_state["gpu_generate_error"], icon="⚠️")

    # A row sized by its content (wrapping when narrow), not fixed column shares: in 2/7 of the page
    # the four window buttons did not fit at 1400 px, and "10 min" was cut off.
    controls = st.container(horizontal=True, vertical_alignment="bottom", gap="medium", key="gpu_controls")
    window_label = controls.segmented_control(
        _("Window"), list(WINDOWS), default="2 min", key="gpu_window", width="content", format_func=_
    )
    live = controls.toggle(
        _("Live"), value=True, key="gpu_live", help=_("Redraw every {s} s", s=f"{REFRESH_SECONDS:g}")
    )
    controls.download_button(
        _("Download samples (CSV)"),
        data=watch.to_csv,
        file_name="gpu-samples.csv",
        mime="text/csv",
        key="gpu_csv",
        on_click="ignore",
    )
    # Made a fragment here, not where it is defined: whether it redraws by itself is the Live toggle's.
    st.fragment(run_every=REFRESH_SECONDS if live else None)(monitor)(watch, bool(choices), window_label)


if __name__ == "__main__":
    main()
