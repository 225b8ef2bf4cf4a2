#!/usr/bin/env python3
"""Make a folder of real documents with known text on known pages, slides and sheets.

Usage: make_documents.py OUTDIR [--scifact CORPUS.jsonl [--abstracts N]]

The documents are written by real writers: LibreOffice (headless, from Flat ODF it is
given here), pandoc, and the PyPI libraries pinned in requirements.txt (python-docx,
python-pptx, openpyxl, fpdf2). OUTDIR/expected.json says, for every file, its format,
the error an extractor should give (or null) and a list of {question, phrase, label}:
`phrase` must appear (whitespace collapsed) in the part labelled `label`.
With --scifact, also writes scifact.pdf, the first N abstracts of a SciFact corpus one
after another, for timing page extraction.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from xml.sax.saxutils import escape

# ---------------------------------------------------------------- known facts

# One made-up fact per page of facts.pdf; nothing else in the folder says them.
PAGE_FACTS = [
    ("Which harbour exports saffron?", "The harbour of Velmora exports saffron to eleven northern ports"),
    ("What do the Quillan monks brew?", "The monks of Quillan Abbey brew a bitter tea from juniper bark"),
    ("How tall is the Tarsk lighthouse?", "The lighthouse at Tarsk Point stands ninety-three metres tall"),
    ("Who mapped the Oruvian caves?", "The Oruvian caves were first mapped by the cartographer Ilsa Debrenn"),
    ("What currency does Pelmark use?", "The republic of Pelmark pays its soldiers in copper lozenges"),
]

PLACES = ["Velmora", "Quillan", "Tarsk", "Oruvian caves", "Pelmark"]

# Long sentences for the two-column PDF: each wraps over several lines of a narrow column,
# so an extractor that interleaves the columns line by line breaks every one of them.
LEFT_COLUMN = [
    "The glassblowers of Morrow Quay anneal every cobalt goblet for nine hours in a kiln fed only with beech charcoal",
    "Apprentices in the Morrow workshops spend their first winter grinding sand from the dunes south of the estuary",
    "A guild charter from the year of the flood forbids any Morrow goblet to be sold beyond the river before midsummer",
]
RIGHT_COLUMN = [
    "Beekeepers on the island of Saltholm move their hives across the strait each spring on flat barges pulled by oxen",
    "Saltholm heather honey is graded by a council of five elders who taste it from silver spoons at dawn",
    "Every autumn the Saltholm ferry carries the honey casks to the mainland market at Kelby in a single night crossing",
]

FILLER_WORDS = (
    "river stone meadow lantern harvest copper window market ledger orchard valley bridge "
    "winter signal quarry timber garden archive chapel furnace compass pasture canal"
).split()


def filler(seed, sentences):
    """Deterministic filler prose: plain sentences that name no known fact."""
    out = []
    n = len(FILLER_WORDS)
    for s in range(sentences):
        words = [FILLER_WORDS[(seed * 7 + s * 13 + i * 5) % n] for i in range(12)]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


# ---------------------------------------------------------------- Flat ODF

FODT_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
 xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
 xmlns:dc="http://purl.org/dc/elements/1.1/"
 xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
"""

FODT_STYLES = """<office:styles>
 <style:style style:name="Standard" style:family="paragraph" style:class="text"/>
 <style:style style:name="Text_20_body" style:display-name="Text body" style:family="paragraph"
  style:parent-style-name="Standard" style:class="text">
  <style:paragraph-properties fo:margin-top="0cm" fo:margin-bottom="0.25cm"/></style:style>
 <style:style style:name="Heading" style:family="paragraph" style:parent-style-name="Standard"
  style:next-style-name="Text_20_body" style:class="text">
  <style:paragraph-properties fo:margin-top="0.42cm" fo:margin-bottom="0.21cm" fo:keep-with-next="always"/>
  <style:text-properties fo:font-size="14pt" fo:font-weight="bold"/></style:style>
 <style:style style:name="Heading_20_1" style:display-name="Heading 1" style:family="paragraph"
  style:parent-style-name="Heading" style:default-outline-level="1" style:class="text">
  <style:text-properties fo:font-size="130%"/></style:style>
 <style:style style:name="Heading_20_2" style:display-name="Heading 2" style:family="paragraph"
  style:parent-style-name="Heading" style:default-outline-level="2" style:class="text">
  <style:text-properties fo:font-size="115%"/></style:style>
</office:styles>
<office:automatic-styles>
 <style:style style:name="PageBreak" style:family="paragraph" style:parent-style-name="Text_20_body">
  <style:paragraph-properties fo:break-before="page"/></style:style>
 <style:style style:name="HeadPageBreak" style:family="paragraph" style:parent-style-name="Heading_20_1">
  <style:paragraph-properties fo:break-before="page"/></style:style>
 <style:style style:name="ColumnBreak" style:family="paragraph" style:parent-style-name="Text_20_body">
  <style:paragraph-properties fo:break-before="column"/></style:style>
 <style:style style:name="TwoColumns" style:family="section">
  <style:section-properties><style:columns fo:column-count="2" fo:column-gap="1cm"/></style:section-properties>
 </style:style>
 <text:list-style style:name="Bullets">
  <text:list-level-style-bullet text:level="1" text:bullet-char="•">
   <style:list-level-properties text:list-level-position-and-space-mode="label-alignment">
    <style:list-level-label-alignment text:label-followed-by="listtab" text:list-tab-stop-position="1.27cm"
     fo:text-indent="-0.635cm" fo:margin-left="1.27cm"/>
   </style:list-level-properties>
  </text:list-level-style-bullet>
 </text:list-style>
</office:automatic-styles>
"""


def fodt(meta, blocks):
    """A Flat ODF text document. blocks: ("h", level, text), ("p", text), ("pb", text) a
    paragraph on a new page, ("hpb", text) a level-1 heading on a new page, ("cb", text) a
    paragraph in the next column, ("list", [items]), ("table", [[cells]]), ("cols", [blocks])."""

    def render(bs):
        out = []
        for b in bs:
            kind = b[0]
            if kind == "h":
                out.append(f'<text:h text:style-name="Heading_20_{b[1]}" text:outline-level="{b[1]}">{escape(b[2])}</text:h>')
            elif kind == "hpb":
                out.append(f'<text:h text:style-name="HeadPageBreak" text:outline-level="1">{escape(b[1])}</text:h>')
            elif kind == "p":
                out.append(f'<text:p text:style-name="Text_20_body">{escape(b[1])}</text:p>')
            elif kind == "pb":
                out.append(f'<text:p text:style-name="PageBreak">{escape(b[1])}</text:p>')
            elif kind == "cb":
                out.append(f'<text:p text:style-name="ColumnBreak">{escape(b[1])}</text:p>')
            elif kind == "list":
                items = "".join(f"<text:list-item><text:p>{escape(i)}</text:p></text:list-item>" for i in b[1])
                out.append(f'<text:list text:style-name="Bullets">{items}</text:list>')
            elif kind == "table":
                ncols = len(b[1][0])
                rows = "".join(
                    "<table:table-row>"
                    + "".join(
                        f'<table:table-cell office:value-type="string"><text:p>{escape(c)}</text:p></table:table-cell>'
                        for c in row
                    )
                    + "</table:table-row>"
                    for row in b[1]
                )
                out.append(
                    f'<table:table table:name="Table{len(out)}"><table:table-column table:number-columns-repeated="{ncols}"/>{rows}</table:table>'
                )
            elif kind == "cols":
                out.append(f'<text:section text:style-name="TwoColumns" text:name="Columns">{render(b[1])}</text:section>')
            else:
                raise ValueError(kind)
        return "\n".join(out)

    m = (
        f"<office:meta><dc:title>{escape(meta['title'])}</dc:title>"
        f"<meta:initial-creator>{escape(meta['author'])}</meta:initial-creator>"
        f"<dc:creator>{escape(meta['author'])}</dc:creator>"
        f"<dc:subject>{escape(meta.get('subject', ''))}</dc:subject>"
        f"<meta:keyword>{escape(meta.get('keywords', ''))}</meta:keyword>"
        "<meta:creation-date>2024-03-05T10:20:30</meta:creation-date>"
        "<dc:date>2024-04-06T11:22:33</dc:date></office:meta>\n"
    )
    return FODT_HEAD + m + FODT_STYLES + "<office:body><office:text>\n" + render(blocks) + "\n</office:text></office:body></office:document>\n"


class Soffice:
    """Runs LibreOffice headless with a private profile, so parallel runs don't clash."""

    def __init__(self, workdir):
        self.profile = tempfile.mkdtemp(prefix="ragbox-soffice-")
        self.workdir = workdir

    def convert(self, target, inputs, outdir):
        cmd = [
            shutil.which("soffice") or "soffice",
            f"-env:UserInstallation=file://{self.profile}",
            "--headless",
            "--norestore",
            "--convert-to",
            target,
            "--outdir",
            outdir,
            *inputs,
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)

    def close(self):
        shutil.rmtree(self.profile, ignore_errors=True)


def moved(src, dst):
    os.replace(src, dst)
    return dst


# ---------------------------------------------------------------- documents


def facts_doc():
    blocks = [("h", 1, "Atlas of Invented Places")]
    for i, (_, fact) in enumerate(PAGE_FACTS):
        title = f"Part {i + 1}: {PLACES[i]}"
        blocks.append(("hpb", title) if i else ("h", 2, title))
        blocks.append(("p", fact + "."))
        for k in range(3):
            blocks.append(("p", filler(i * 3 + k, 4)))
    meta = {"title": "Atlas of Invented Places", "author": "Mara Quint", "subject": "Test atlas", "keywords": "ragbox, test, atlas"}
    checks = [{"question": q, "phrase": f, "label": f"p. {i + 1}"} for i, (q, f) in enumerate(PAGE_FACTS)]
    return fodt(meta, blocks), checks


def columns_doc():
    col = [("h", 2, "Glass of Morrow Quay")]
    col += [("p", s + ".") for s in LEFT_COLUMN]
    col.append(("cb", "Honey of Saltholm."))
    col += [("p", s + ".") for s in RIGHT_COLUMN]
    blocks = [("h", 1, "Two Trades of the Coast"), ("cols", col)]
    meta = {"title": "Two Trades of the Coast", "author": "Mara Quint"}
    checks = [{"question": f"What about: {s[:40]}?", "phrase": s, "label": "p. 1"} for s in LEFT_COLUMN + RIGHT_COLUMN]
    return fodt(meta, blocks), checks


def report_doc():
    """Headings, a list, a table and a page break; exported to DOCX, ODT and RTF."""
    blocks = [
        ("h", 1, "Quarterly Report of the Lantern Guild"),
        ("p", "The Lantern Guild repaired four hundred and twelve street lamps in the old town this quarter."),
        ("h", 2, "Supplies"),
        ("list", ["Whale-free lamp oil from Dunmere", "Brass wicks cut in Harrowgate", "Spare glass chimneys"]),
        ("table", [["Item", "Count", "Cost"], ["Wicks", "880", "44 crowns"], ["Chimneys", "57", "171 crowns"]]),
        ("pb", "The guild treasurer, Oswin Farrow, closed the ledger on the last day of the quarter."),
        ("h", 2, "Outlook"),
        ("p", "Next quarter the guild will light the new bridge over the Tamsin river."),
    ]
    meta = {"title": "Lantern Guild Report", "author": "Oswin Farrow", "subject": "Quarterly report", "keywords": "lamps, guild"}
    checks = [
        {"question": "How many lamps were repaired?", "phrase": "repaired four hundred and twelve street lamps", "label": "p. 1"},
        {"question": "Where is the lamp oil from?", "phrase": "Whale-free lamp oil from Dunmere", "label": "p. 1"},
        {"question": "What did the chimneys cost?", "phrase": "Chimneys | 57 | 171 crowns", "label": "p. 1"},
        {"question": "Who closed the ledger?", "phrase": "Oswin Farrow, closed the ledger", "label": "p. 2"},
        {"question": "What will be lit next quarter?", "phrase": "light the new bridge over the Tamsin river", "label": "p. 2"},
    ]
    return fodt(meta, blocks), checks


def story_doc():
    blocks = [
        ("h", 1, "The Clockmaker of Brisk"),
        ("p", "In the town of Brisk the clockmaker Tobiah Wren built a clock that ran backwards on Sundays."),
        ("h", 2, "The Apprentice"),
        ("p", "His apprentice, a girl named Fenna, oiled the gears with goose fat every morning."),
        ("list", ["A pendulum of walnut", "A face of painted tin"]),
        ("table", [["Clock", "Year"], ["Sunday clock", "1791"]]),
    ]
    meta = {"title": "The Clockmaker of Brisk", "author": "Ada Holm", "subject": "A short story", "keywords": "clocks"}
    checks = [
        {"question": "Which clock ran backwards?", "phrase": "built a clock that ran backwards on Sundays", "label": None},
        {"question": "What did Fenna oil the gears with?", "phrase": "oiled the gears with goose fat", "label": None},
        {"question": "What was the pendulum made of?", "phrase": "A pendulum of walnut", "label": None},
        {"question": "When was the Sunday clock made?", "phrase": "Sunday clock | 1791", "label": None},
    ]
    return fodt(meta, blocks), checks


def make_python_docx(path):
    import docx

    d = docx.Document()
    d.core_properties.title = "Ferry Timetable Notes"
    d.core_properties.author = "Lene Kovac"
    d.core_properties.subject = "Ferries"
    d.core_properties.keywords = "ferry, timetable"
    d.add_heading("Ferry Timetable Notes", level=0)
    d.add_heading("Morning crossings", level=1)
    d.add_paragraph("The first ferry to Inchmarra leaves the pier at a quarter past five.")
    d.add_paragraph("Bicycles travel free before seven", style="List Bullet")
    d.add_paragraph("Dogs must wear a muzzle on deck", style="List Bullet")
    t = d.add_table(rows=2, cols=3)
    for i, row in enumerate([["Route", "Minutes", "Fare"], ["Inchmarra", "42", "3 pence"]]):
        for j, c in enumerate(row):
            t.cell(i, j).text = c
    d.add_page_break()
    d.add_heading("Evening crossings", level=1)
    d.add_paragraph("The last ferry back from Inchmarra waits for the mail boat from Rossholt.")
    d.save(path)
    return [
        {"question": "When does the first ferry leave?", "phrase": "leaves the pier at a quarter past five", "label": "p. 1"},
        {"question": "Do bicycles pay?", "phrase": "- Bicycles travel free before seven", "label": "p. 1"},
        {"question": "How long is the Inchmarra crossing?", "phrase": "Inchmarra | 42 | 3 pence", "label": "p. 1"},
        {"question": "What does the last ferry wait for?", "phrase": "waits for the mail boat from Rossholt", "label": "p. 2"},
        {"question": "Which heading covers the evening?", "phrase": "# Evening crossings", "label": "p. 2"},
    ]


def make_pptx(path):
    from pptx import Presentation
    from pptx.util import Inches

    p = Presentation()
    p.core_properties.title = "Orchard Plans"
    p.core_properties.author = "Piet Lorne"
    slides = []
    content = [
        ("Orchard Plans", "Planting three hundred quince trees on the north slope", "Remember to thank the Ferrow family."),
        ("Irrigation", "Rainwater from the barn roof fills the stone cistern", "The cistern holds forty thousand litres."),
        ("Harvest", "Quince jelly is sold at the Candlemas fair", "Jelly jars come from the glassworks at Morrow."),
    ]
    for title, body, notes in content:
        s = p.slides.add_slide(p.slide_layouts[1])
        s.shapes.title.text = title
        s.placeholders[1].text = body
        s.notes_slide.notes_text_frame.text = notes
        slides.append(s)
    rows, cols = 2, 2
    tbl = slides[1].shapes.add_table(rows, cols, Inches(1), Inches(5), Inches(6), Inches(1)).table
    for i, row in enumerate([["Tank", "Litres"], ["Cistern", "40000"]]):
        for j, c in enumerate(row):
            tbl.cell(i, j).text = c
    # Presentation order differs from the slide files' order: the third slide made is shown
    # second, so an extractor that follows file names gets the labels wrong.
    lst = p.slides._sldIdLst
    ids = list(lst)
    lst.remove(ids[2])
    lst.insert(1, ids[2])
    p.save(path)
    return [
        {"question": "What is planted on the north slope?", "phrase": "three hundred quince trees", "label": "slide 1"},
        {"question": "Where is quince jelly sold?", "phrase": "Quince jelly is sold at the Candlemas fair", "label": "slide 2"},
        {"question": "Where do the jars come from?", "phrase": "Jelly jars come from the glassworks at Morrow", "label": "slide 2"},
        {"question": "What fills the cistern?", "phrase": "Rainwater from the barn roof", "label": "slide 3"},
        {"question": "How much does the cistern hold?", "phrase": "Cistern | 40000", "label": "slide 3"},
        {"question": "What is the harvest slide's title?", "phrase": "# Harvest", "label": "slide 2"},
    ]


def make_xlsx(path):
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Costs"
    ws.append(["Item", "Supplier", "Amount"])
    ws.append(["Anchor chain", "Brannock Forge", 1250])
    ws.append(["Sailcloth", "Widow Mairs", 310.5])
    ws["E9"] = "Paid in full"
    st = wb.create_sheet("Staff")
    st.append(["Name", "Role"])
    st.append(["Corin Vale", "Bosun"])
    st.append([])
    st.append(["Jessamy Holt", "Navigator"])
    wb.properties.title = "Shipyard Ledger"
    wb.properties.creator = "Corin Vale"
    wb.save(path)
    return [
        {"question": "Who supplies the anchor chain?", "phrase": "Anchor chain | Brannock Forge | 1250", "label": "sheet Costs"},
        {"question": "What did the sailcloth cost?", "phrase": "Sailcloth | Widow Mairs | 310.5", "label": "sheet Costs"},
        {"question": "Is it paid?", "phrase": "Paid in full", "label": "sheet Costs"},
        {"question": "Who is the navigator?", "phrase": "Jessamy Holt | Navigator", "label": "sheet Staff"},
    ]


def make_epub(path, tmp):
    md = os.path.join(tmp, "book.md")
    chapters = [
        ("The Salt Road", "Caravans on the salt road rest at the well of Ambrel every seventh night."),
        ("The Glass Tower", "The glass tower of Quorn was built by a guild of blind masons."),
        ("The Last Harbour", "At the last harbour the tide clerks record the moon in a copper book."),
    ]
    with open(md, "w") as f:
        f.write("---\ntitle: Roads and Harbours\nauthor: Idris Pell\nlang: en\n---\n\n")
        for title, text in chapters:
            f.write(f"# {title}\n\n{text}\n\n{filler(len(title), 5)}\n\n")
    subprocess.run(["pandoc", md, "-o", path], check=True, timeout=120)
    return [
        {"question": f"What about {t}?", "phrase": text.rstrip("."), "label": t} for t, text in chapters
    ]


def make_ipynb(path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Tide Tables of Velmora\n", "\n", "We fit the harmonic constants of the Velmora tide gauge."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": ["import numpy as np\n", "amplitude = np.float64(2.75)  # metres at spring tide"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["SECRET OUTPUT NOT INDEXED\n"]}]},
        {"cell_type": "markdown", "metadata": {}, "source": "## Result\n\nThe spring tide at Velmora rises two metres and seventy-five centimetres."},
    ]
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    with open(path, "w") as f:
        json.dump(nb, f, indent=1)
    return [
        {"question": "What does the notebook fit?", "phrase": "harmonic constants of the Velmora tide gauge", "label": None},
        {"question": "What is the spring tide amplitude?", "phrase": "amplitude = np.float64(2.75)", "label": None},
        {"question": "Is the code fenced?", "phrase": "```python", "label": None},
        {"question": "How high is the spring tide?", "phrase": "rises two metres and seventy-five centimetres", "label": None},
    ]


def make_scan_pdf(path):
    """A PDF whose pages are only images of text (as a scanner makes): no text layer."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    pdf = FPDF()
    for n in range(2):
        img = Image.new("L", (800, 1100), 255)
        draw = ImageDraw.Draw(img)
        for line in range(20):
            draw.text((60, 60 + line * 40), f"Scanned page {n + 1} line {line + 1}: the ink is only pixels.", fill=0)
        pdf.add_page()
        pdf.image(img, x=10, y=10, w=190)
    pdf.set_title("Scanned Letter")
    pdf.output(path)


def make_locked_pdf(path):
    """A PDF that needs a password to open (RC4, as fpdf2 writes it without extra packages)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner-secret", user_password="user-secret")
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="Locked away.")
    pdf.output(path)


def make_fpdf_text(path):
    """A text PDF written by fpdf2 (core fonts, WinAnsi), two pages, the second in two columns."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Notes on Kelby Market")
    pdf.set_author("Tam Orrin")
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 6, "The market at Kelby opens at dawn on the first Tuesday of every month. " + filler(3, 4))
    pdf.add_page()
    with pdf.text_columns(ncols=2, gutter=10) as cols:
        cols.write("The wool merchants of Kelby weigh each fleece on a brass balance older than the town hall itself. " + filler(5, 8))
        cols.new_column()
        cols.write("The fishmongers of Kelby pack their herring in seaweed and ice cut from the mill pond in January. " + filler(7, 8))
    pdf.output(path)
    return [
        {"question": "When does Kelby market open?", "phrase": "opens at dawn on the first Tuesday of every month", "label": "p. 1"},
        {"question": "How is fleece weighed?", "phrase": "weigh each fleece on a brass balance older than the town hall itself", "label": "p. 2"},
        {"question": "How is herring packed?", "phrase": "pack their herring in seaweed and ice cut from the mill pond in January", "label": "p. 2"},
    ]


def scifact_doc(corpus, n):
    blocks = [("h", 1, "SciFact abstracts")]
    first = None
    with open(corpus) as f:
        for i, line in enumerate(f):
            if i >= n:
                break
            d = json.loads(line)
            first = first or d["title"]
            blocks.append(("h", 2, d["title"]))
            blocks.append(("p", d["text"]))
    meta = {"title": f"{n} SciFact abstracts", "author": "SciFact"}
    return fodt(meta, blocks), [{"question": "First abstract?", "phrase": first, "label": "p. 1"}]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--scifact", metavar="CORPUS_JSONL", help="also write scifact.pdf from this corpus.jsonl")
    ap.add_argument("--abstracts", type=int, default=200)
    a = ap.parse_args()
    out = os.path.abspath(a.outdir)
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="ragbox-docs-")
    so = Soffice(tmp)
    expected = {}

    def entry(name, fmt, checks, error=None, title=None):
        expected[name] = {"format": fmt, "error": error, "title": title, "checks": checks}

    try:
        def write_fodt(stem, text):
            p = os.path.join(tmp, stem + ".fodt")
            with open(p, "w") as f:
                f.write(text)
            return p

        facts, facts_checks = facts_doc()
        columns, columns_checks = columns_doc()
        report, report_checks = report_doc()
        story, story_checks = story_doc()
        pdf_inputs = [write_fodt("facts", facts), write_fodt("columns", columns)]
        sci_checks = None
        if a.scifact:
            sci, sci_checks = scifact_doc(a.scifact, a.abstracts)
            pdf_inputs.append(write_fodt("scifact", sci))
        so.convert("pdf", pdf_inputs, out)
        entry("facts.pdf", "pdf", facts_checks, title="Atlas of Invented Places")
        entry("columns.pdf", "pdf", columns_checks, title="Two Trades of the Coast")
        if sci_checks:
            entry("scifact.pdf", "pdf", sci_checks)

        rep = write_fodt("report", report)
        so.convert("docx:MS Word 2007 XML", [rep], out)
        entry("report.docx", "docx", report_checks, title="Lantern Guild Report")
        so.convert("rtf", [rep], out)
        # RTF has no pages either, and LibreOffice writes its page break as \page: the
        # reader keeps it as text; one part, no label.
        entry("report.rtf", "rtf", [dict(c, label=None) for c in report_checks], title="Lantern Guild Report")
        so.convert("odt", [write_fodt("story", story)], out)
        entry("story.odt", "odt", story_checks, title="The Clockmaker of Brisk")

        entry("ferry.docx", "docx", make_python_docx(os.path.join(out, "ferry.docx")), title="Ferry Timetable Notes")
        entry("orchard.pptx", "pptx", make_pptx(os.path.join(out, "orchard.pptx")), title="Orchard Plans")
        xlsx_checks = make_xlsx(os.path.join(out, "ledger.xlsx"))
        entry("ledger.xlsx", "xlsx", xlsx_checks, title="Shipyard Ledger")
        so.convert("ods", [os.path.join(out, "ledger.xlsx")], out)
        entry("ledger.ods", "ods", xlsx_checks)
        entry("roads.epub", "epub", make_epub(os.path.join(out, "roads.epub"), tmp), title="Roads and Harbours")
        entry("tides.ipynb", "ipynb", make_ipynb(os.path.join(out, "tides.ipynb")), title="Tide Tables of Velmora")
        entry("kelby.pdf", "pdf", make_fpdf_text(os.path.join(out, "kelby.pdf")), title="Notes on Kelby Market")
        make_locked_pdf(os.path.join(out, "locked.pdf"))
        entry("locked.pdf", "pdf", [], error="unsupported")
        make_scan_pdf(os.path.join(out, "scan.pdf"))
        entry("scan.pdf", "pdf", [], error="no-text")
    finally:
        so.close()
        shutil.rmtree(tmp, ignore_errors=True)

    missing = [n for n in expected if not os.path.exists(os.path.join(out, n))]
    if missing:
        sys.exit(f"not written: {missing}")
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {len(expected)} documents and expected.json to {out}")


if __name__ == "__main__":
    main()
