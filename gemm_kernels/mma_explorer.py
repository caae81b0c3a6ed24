"""The MMA explorer: pick an MMA shape (a chapter's), a K step and a ring stage, and see the
instruction descriptor's and both shared-memory descriptors' bits, the swizzled bytes of A and B
that MMA reads, and the TMEM lanes and columns it writes (for chapter 8's pair: in both CTAs).

Everything shown is computed here, offline, by the code the kernels and the emulator use: the
descriptors by ``gemm_kernels.layouts`` (what ``kernels.descriptors`` puts in the kernels), the
bytes by ``emu.tensor_core.operand_addresses`` (the emulator's model of how the tensor core reads
a descriptor; ``tests/hopper/`` holds the recording that checks its Hopper-shared part against an
H200's wgmma), the stage offsets by the kernels' shared-memory plans. ``Explorer`` renders as an
element of class ``gk-explorer`` with a small script and no library.
"""
from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass

import numpy as np

from . import layouts

#: where the emulator puts the dynamic shared memory (``emu.launch``); the descriptors' start
#: addresses are shown for it
SMEM_BASE = 0x400
K_STEP_BYTES = 32  # one MMA's 16 fp16 along K
CHUNK = 16  # bytes: the tensor core reads a row's K elements in 16-byte chunks


@dataclass(frozen=True)
class Shape:
    label: str
    m: int  # the MMA's M (the pair's for cta_group 2)
    n: int
    cta_group: int
    stages: int
    a_stage: tuple  # offset of each stage's A tile in the plan
    b_stage: tuple
    tile_bytes: int  # one CTA's A (or B) tile per stage
    acc_cols: int  # TMEM columns of one accumulator
    k_steps: int  # MMAs per stage (BLOCK_K / 16)


def shapes():
    """The shapes of chapters 7 (one CTA) and 8 (a CTA pair), with their plans' stage offsets."""
    from .kernels import v7_warp_specialized as v7
    from .kernels import v8_two_cta as v8

    out = []
    for label, mod, m, n, group in (("step 7: M = 128, N = 128, one CTA (cta_group::1)", v7, v7.BLOCK_M,
                                     v7.BLOCK_N, 1),
                                    ("step 8: M = 256, N = 256, a CTA pair (cta_group::2)", v8, v8.CLUSTER_M,
                                     v8.CLUSTER_N, 2)):
        plan, _ = mod.make_plan(mod.DEFAULT_DEPTH)
        a = tuple(off for name, off, _ in plan.regions if name.startswith("A stage["))
        b = tuple(off for name, off, _ in plan.regions if name.startswith("B stage["))
        out.append(Shape(label, m, n, group, len(a), a, b, mod.TILE_BYTES, mod.ACC_COLS,
                         mod.BLOCK_K // mod.MMA_K))
    return out


def _bits(value, width, fields):
    """[(name, first bit, last bit, value)] of a descriptor, low bits first."""
    return [[name, lo, hi, (value >> lo) & ((1 << (hi - lo + 1)) - 1)] for name, lo, hi in fields]


IDESC_FIELDS = (("sparsity selector", 0, 1), ("sparse", 2, 2), ("saturate", 3, 3), ("D format", 4, 5),
                ("reserved", 6, 6), ("A format", 7, 9), ("B format", 10, 12), ("negate A", 13, 13),
                ("negate B", 14, 14), ("A major (0: K)", 15, 15), ("B major (0: K)", 16, 16), ("N >> 3", 17, 22),
                ("reserved", 23, 23), ("M >> 4", 24, 28), ("reserved", 29, 29), ("max shift", 30, 31))
SMEM_FIELDS = (("start address >> 4", 0, 13), ("reserved", 14, 15), ("LBO >> 4", 16, 29), ("reserved", 30, 31),
               ("SBO >> 4", 32, 45), ("fixed 0b001", 46, 48), ("base offset", 49, 51), ("LBO mode", 52, 52),
               ("reserved", 53, 60), ("swizzle (2: 128B)", 61, 63))


def one_mma(shape, k_step, stage):
    """What the MMA at ``k_step`` of ring stage ``stage`` reads and writes (a dict for the page)."""
    from .emu.tensor_core import operand_addresses
    from .kernels.descriptors import SBO_8_ROWS_128B

    if not 0 <= k_step < shape.k_steps or not 0 <= stage < shape.stages:
        raise ValueError(f"k_step must be in 0..{shape.k_steps - 1} and stage in 0..{shape.stages - 1}")
    idesc = layouts.make_instr_desc(shape.m, shape.n, cta_group=shape.cta_group)
    rows_a = shape.m // shape.cta_group  # each CTA's A rows (and D rows)
    rows_b = shape.n // shape.cta_group
    out = {"idesc": f"0x{idesc:08x}", "idesc_fields": _bits(idesc, 32, IDESC_FIELDS),
           "decoded": {k: v for k, v in layouts.decode_instr_desc(idesc).items() if k in ("m", "n", "a_dtype",
                                                                                            "acc_dtype")}}
    for op, base, rows in (("A", shape.a_stage[stage], rows_a), ("B", shape.b_stage[stage], rows_b)):
        addr = SMEM_BASE + base + k_step * K_STEP_BYTES
        desc = layouts.make_smem_desc(addr, lbo=16, sbo=SBO_8_ROWS_128B, swizzle="128B")
        first, _ = operand_addresses(desc, rows, op)  # (rows, 16): each element's first byte
        rel = first - (SMEM_BASE + base)
        assert rel.min() >= 0 and rel.max() + 2 <= shape.tile_bytes, (op, rel.min(), rel.max())
        chunks = np.zeros((rows, 128 // CHUNK), dtype=bool)  # the tile's 128-byte rows, 16-byte chunks
        for r in range(rows):
            for byte in rel[r]:
                assert byte // 128 == r, "a K-major 128B-swizzled row stays in its 128-byte line"
                chunks[r, (byte % 128) // CHUNK] = True
        out[op] = {"desc": f"0x{desc:016x}", "fields": _bits(desc, 64, SMEM_FIELDS), "address": f"0x{addr:05x}",
                   "rows": rows, "chunks": "".join("1" if c else "0" for c in chunks.ravel()),
                   "first_rows": [[int(x) for x in rel[r, ::8]] for r in range(8)]}
    d = {"lanes": [0, rows_a - 1], "columns": [0, shape.n - 1], "acc_cols": shape.acc_cols,
         "ctas": [{"cta": c, "d_rows": [c * rows_a, c * rows_a + rows_a - 1]} for c in range(shape.cta_group)]}
    out["tmem"] = d
    return out


class Explorer:
    """The explorer's data for every shape, K step and stage, rendered as a ``gk-explorer``."""

    def __init__(self):
        self.shapes = shapes()
        self.data = [{"label": s.label, "k_steps": s.k_steps, "stages": s.stages, "cta_group": s.cta_group,
                      "tile_bytes": s.tile_bytes,
                      "mmas": [[one_mma(s, k, st) for st in range(s.stages)] for k in range(s.k_steps)]}
                     for s in self.shapes]

    def _repr_html_(self):
        payload = json.dumps(self.data, separators=(",", ":"))
        # unique per rendering: a re-run cell, or the same view in two open notebooks, must not
        # find another view's element (JupyterLab keeps every open notebook in one document)
        ident = "gk-ex-" + hashlib.sha1(payload.encode()).hexdigest()[:8] + "-" + uuid.uuid4().hex[:8]
        return (_HTML.replace("IDENT", ident)
                + "<script>(function(){var X=" + payload + ";var ID='" + ident + "';" + _JS + "})();</script>")


_HTML = """<div class="gk-explorer" id="IDENT" style="width:100%;font-size:14px">
<div style="display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin-bottom:6px">
<label>MMA shape <select class="gk-shape" style="font-size:14px"></select></label>
<label>K step <select class="gk-k" style="font-size:14px"></select></label>
<label>stage <select class="gk-stage" style="font-size:14px"></select></label>
</div>
<div class="gk-out"></div>
</div>
"""

_JS = r"""
var root=document.getElementById(ID),out=root.querySelector('.gk-out');
var S=root.querySelector('.gk-shape'),K=root.querySelector('.gk-k'),T=root.querySelector('.gk-stage');
X.forEach(function(s,i){var o=document.createElement('option');o.value=i;o.textContent=s.label;S.appendChild(o);});
function fill(sel,n,name){var v=Number(sel.value)||0;sel.innerHTML='';for(var i=0;i<n;i++){var o=document.createElement('option');
 o.value=i;o.textContent=name+' '+i;sel.appendChild(o);}sel.value=Math.min(v,n-1);}
function fields(f){var h='<table style="border-collapse:collapse;font-family:monospace;font-size:13px">'+
 '<tr><th style="text-align:left;padding:1px 6px">bits</th><th style="text-align:left;padding:1px 6px">field</th><th style="text-align:right;padding:1px 6px">value</th></tr>';
 f.forEach(function(r){if(r[0]==='reserved'&&r[3]===0)return;h+='<tr><td style="padding:1px 6px">'+(r[1]===r[2]?r[1]:r[1]+'-'+r[2])+
 '</td><td style="padding:1px 6px">'+r[0]+'</td><td style="text-align:right;padding:1px 6px">'+r[3]+'</td></tr>';});return h+'</table>';}
function tile(op,m,cls){var rows=m.rows,c=m.chunks,w=8,cw=22,rh=Math.max(2,Math.floor(256/rows)),svg='<svg class="'+cls+
 '" width="'+(w*cw+40)+'" height="'+(rows*rh+24)+'" style="font-size:13px">';var n=0;
 for(var r=0;r<rows;r++)for(var k=0;k<w;k++){var on=c[r*w+k]==='1';if(on)n++;
  svg+='<rect x="'+(k*cw)+'" y="'+(r*rh+18)+'" width="'+(cw-1)+'" height="'+(rh>2?rh-1:rh)+'" fill="'+(on?'#D55E00':'#EEEEEE')+'"></rect>';}
 svg+='<text x="0" y="13">'+op+' tile: '+rows+' rows x 128 B</text></svg>';return [svg,n];}
function tmem(d,g){var h='';d.ctas.forEach(function(c){h+='<div style="margin:2px 0">'+(g>1?'CTA '+c.cta+': ':'')+'lanes '+d.lanes[0]+'-'+d.lanes[1]+
 ', columns '+d.columns[0]+'-'+d.columns[1]+' (accumulator 0; accumulator 1 starts at column '+d.acc_cols+') = D rows '+c.d_rows[0]+'-'+c.d_rows[1]+
 '<svg width="260" height="40" style="display:block"><rect x="0" y="4" width="256" height="32" fill="#EEEEEE"></rect><rect x="'+(d.columns[0]/2)+
 '" y="4" width="'+((d.columns[1]-d.columns[0]+1)/2)+'" height="32" fill="#0072B2"></rect></svg></div>';});return h;}
function render(){var s=X[Number(S.value)];fill(K,s.k_steps,'K step');fill(T,s.stages,'stage');
 var m=s.mmas[Number(K.value)][Number(T.value)];
 var a=tile('A',m.A,'gk-tile-a'),b=tile('B',m.B,'gk-tile-b');
 var h='<div style="display:flex;flex-wrap:wrap;gap:20px">'+
  '<div><b>instruction descriptor '+m.idesc+'</b> (M = '+m.decoded.m+', N = '+m.decoded.n+', '+m.decoded.a_dtype+' -> '+m.decoded.acc_dtype+')'+fields(m.idesc_fields)+'</div>'+
  '<div><b>A descriptor '+m.A.desc+'</b> (start '+m.A.address+')'+fields(m.A.fields)+'</div>'+
  '<div><b>B descriptor '+m.B.desc+'</b> (start '+m.B.address+')'+fields(m.B.fields)+'</div></div>'+
  '<div style="margin-top:8px">Bytes this MMA reads (orange: 16-byte chunks; each row of the stage\'s tile is one 128-byte line, its chunks permuted by the 128B swizzle)'+
  (s.cta_group>1?', in each CTA of the pair: both CTAs hold their half of A and B at the same offsets':'')+':</div>'+
  '<div style="display:flex;gap:24px;flex-wrap:wrap">'+a[0]+b[0]+'</div>'+
  '<div class="gk-counts">A: '+a[1]+' chunks ('+(16*a[1])+' bytes), B: '+b[1]+' chunks ('+(16*b[1])+' bytes)</div>'+
  '<div style="margin-top:4px">Row 0-7 of A: first byte of K element 0 and 8 in the tile: '+m.A.first_rows.map(function(r,i){return i+': '+r.join(', ');}).join('; ')+'</div>'+
  '<div style="margin-top:8px"><b>TMEM written</b> (512 columns drawn 2 per pixel):'+tmem(m.tmem,s.cta_group)+'</div>';
 out.innerHTML=h;root.dataset.state=JSON.stringify({shape:S.value,k:K.value,stage:T.value,a:m.A.desc,b:m.B.desc,idesc:m.idesc,
  achunks:a[1],bchunks:b[1],ctas:m.tmem.ctas.length});}
[S,K,T].forEach(function(e){e.addEventListener('change',render);});
root.gkSet=function(s,k,t){S.value=s;render();K.value=k;T.value=t;render();};
render();
"""
