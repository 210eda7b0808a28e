"""The run page's style, scoped to .activerag-run so that a notebook can show the page inline."""

CSS = """
.activerag-run{font:14px/1.45 system-ui,sans-serif;color:#111827;max-width:1400px}
.activerag-run h1{font-size:20px;margin:0 0 4px}
.activerag-run h2{font-size:16px;margin:18px 0 8px;border-bottom:1px solid #e5e7eb}
.activerag-run h3{font-size:14px;margin:0 0 6px}
.activerag-run .settings,.activerag-run .note{color:#4b5563}
.activerag-run .answer{font-size:16px;background:#f0f9ff;border-left:4px solid #0284c7;
 padding:8px 12px}
.activerag-run .columns{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.activerag-run .graphcol{flex:0 1 auto;max-width:460px}
.activerag-run .graphcol svg{max-width:100%;height:auto}
.activerag-run .runcol{flex:1 1 520px;min-width:0}
.activerag-run .sentence{border:1px solid #e5e7eb;border-radius:8px;padding:8px 12px;
 margin:0 0 10px}
.activerag-run .row{margin:4px 0}.activerag-run .label{display:inline-block;width:64px;
 color:#6b7280;font-size:12px}
.activerag-run .tok{white-space:pre-wrap;font-family:monospace;padding:2px 0;
 border-radius:2px}
.activerag-run .tok.low{outline:2px solid #7f1d1d;outline-offset:-1px}
.activerag-run .badge{font-size:12px;font-weight:normal;padding:1px 8px;border-radius:10px;
 background:#e5e7eb}
.activerag-run .badge.fired{background:#fecaca;color:#7f1d1d}
.activerag-run .badge.kept{background:#bbf7d0;color:#14532d}
.activerag-run .minp{font-weight:normal;color:#4b5563;font-size:12px}
.activerag-run code{background:#f3f4f6;padding:1px 4px;border-radius:3px}
.activerag-run .accepted{margin:6px 0 0;font-weight:600}
.activerag-run details{margin:4px 0}.activerag-run summary{cursor:pointer;color:#374151}
.activerag-run .doc{margin:4px 0 4px 16px}.activerag-run .doc p{margin:2px 0}
.activerag-run .id{color:#9ca3af;font-size:11px}
.activerag-run .legend{display:flex;align-items:center;gap:8px;flex-wrap:wrap;margin:0 0 10px}
.activerag-run .scale{position:relative;display:inline-block;width:260px;height:14px;
 border-radius:3px}
.activerag-run .legend .scale{margin:16px 0}
.activerag-run .mark{position:absolute;top:-4px;height:22px;border-left:2px solid #111827;
 font-size:11px;padding-left:3px;line-height:34px;white-space:nowrap}
.activerag-run .mark.beta{top:-16px;line-height:8px;border-left-style:dashed}
.activerag-run .tok.masked{text-decoration:line-through 2px #1f2937;opacity:.75}
.activerag-run .badge.changed{background:#ddd6fe;color:#3b0764}
.activerag-run .badge.same{background:#e5e7eb;color:#374151}
.activerag-run .time,.activerag-run .path small{font-weight:normal;color:#6b7280;font-size:11px}
.activerag-run .servers{color:#4b5563;margin:0 0 4px}
.activerag-run .group{display:flex;gap:8px;align-items:baseline;border-top:1px solid #f3f4f6}
.activerag-run .glabel{flex:0 0 132px;font-size:12px;color:#374151}
.activerag-run .group .path{margin:3px 0}.activerag-run .visits{margin-top:10px}
.activerag-run .path{display:flex;flex-wrap:wrap;gap:4px;padding:0;list-style:none}
.activerag-run .path li{background:#fde68a;border:1px solid #b45309;border-radius:4px;
 padding:0 6px;font-family:monospace;font-size:12px}
.activerag-run .path li+li::before{content:"→ ";color:#b45309}
.activerag-run table{border-collapse:collapse}.activerag-run td,.activerag-run th{
 padding:2px 10px;border-bottom:1px solid #e5e7eb;text-align:left}
"""
