"""Writes hostile documents into OUTDIR: each must end within its budget with a
clear per-file error (or what text it holds), leaving the rest of a workspace
indexed and the server alive. Standard library only.

    python3 make_hostile.py OUTDIR [GOOD_PDF]

GOOD_PDF, when given, is cut in half to make a truncated PDF.
"""

import io
import os
import random
import sys
import zipfile
import zlib

CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>{overrides}</Types>'
)
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def ooxml(overrides, main, entries):
    """An Office Open XML zip: its content types (with `overrides`), the
    package's relationship to its `main` part, then `entries` (name -> bytes)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", CONTENT_TYPES.format(overrides=overrides))
        z.writestr(
            "_rels/.rels",
            f'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
            f'relationships"><Relationship Id="rId1" Type="{REL}/officeDocument" Target="{main}"/>'
            "</Relationships>",
        )
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


def docx(entries):
    """A DOCX's zip with `entries` (name -> bytes) beside the package parts."""
    overrides = (
        '<Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    )
    return ooxml(overrides, "word/document.xml", entries)


def zip_bomb_docx():
    """word/document.xml inflates to 1 GiB (a paragraph of spaces), ~1 MiB zipped."""
    head = f'<?xml version="1.0"?><w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>'.encode()
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    block = b" " * (1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = [deflate.compress(head)]
    for _ in range(1024):
        body.append(deflate.compress(block))
    body.append(deflate.compress(tail))
    body.append(deflate.flush())
    data = b"".join(body)
    size = len(head) + (1 << 30) + len(tail)
    crc = zlib.crc32(head)
    for _ in range(1024):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    out = io.BytesIO(docx({}))
    # Append the bomb as a raw deflated entry (zipfile would compress 1 GiB again).
    with zipfile.ZipFile(out, "a") as z:
        info = zipfile.ZipInfo("word/document.xml")
        info.compress_type = zipfile.ZIP_DEFLATED
        info.CRC, info.compress_size, info.file_size = crc, len(data), size
        info.header_offset = z.fp.tell()
        z.fp.write(info.FileHeader(zip64=False))
        z.fp.write(data)
        z.filelist.append(info)
        z.NameToInfo[info.filename] = info
        z.start_dir = z.fp.tell()
        z._didModify = True
    return out.getvalue()


def deep_docx():
    """XML nested 200,000 elements deep."""
    depth = 200_000
    xml = f'<?xml version="1.0"?><w:document xmlns:w="{W}"><w:body>' + "<w:p>" * depth + "</w:p>" * depth
    return docx({"word/document.xml": xml + "</w:body></w:document>"})


def empty_markup_docx():
    """Millions of empty paragraphs: a few hundred KiB zipped, text-free, and
    costly to walk (one such file took the per-user service to 551 MB)."""
    head = f'<?xml version="1.0"?><w:document xmlns:w="{W}"><w:body>'
    return docx({"word/document.xml": head + "<w:p/>" * 8_000_000 + "</w:body></w:document>"})


def million_cells_xlsx():
    """A sheet that claims A1:XFD1048576 and holds a million empty cells."""
    cells = "".join(f'<c r="A{i}"/>' for i in range(1, 1_000_001))
    sheet = (
        '<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
        f'<dimension ref="A1:XFD1048576"/><sheetData><row r="1">{cells}</row></sheetData></worksheet>'
    )
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    overrides = (
        '<Override PartName="/xl/workbook.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    )
    return ooxml(overrides, "xl/workbook.xml", {
        "xl/workbook.xml": f'<?xml version="1.0"?><workbook xmlns="{ns}" xmlns:r="{REL}"><sheets>'
        '<sheet name="Empty" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
        f'relationships"><Relationship Id="rId1" Type="{REL}/worksheet" Target="worksheets/sheet1.xml"/>'
        "</Relationships>",
        "xl/worksheets/sheet1.xml": sheet,
    })


def long_name_epub():
    """An EPUB whose container names a 1 MB path: messages that quote it must stay short."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
            f'version="1.0"><rootfiles><rootfile full-path="{"A" * 1_000_000}.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
    return out.getvalue()


def pdf(objects, root=1):
    """A PDF whose numbered objects are `objects` (bodies), with a correct xref."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root {root} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def cyclic_pdf():
    """A page tree that holds itself, a page whose parent is its child, and a
    form XObject that draws itself: readers that follow references loop."""
    draw = b"q /Fx Do Q BT /F1 12 Tf 72 700 Td (Still here) Tj ET"
    return pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 /Parent 3 0 R >>",
            b"<< /Type /Page /Parent 2 0 R /Kids [2 0 R] /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /XObject << /Fx 5 0 R >> /Font << /F1 6 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n" % len(draw) + draw + b"\nendstream",
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Length 7 "
            b"/Resources << /XObject << /Fx 5 0 R >> >> >>\nstream\n/Fx Do\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def nested_pdf():
    """An object nested 100,000 arrays deep, and a stream behind 50 filters."""
    deep = b"[" * 100_000 + b"]" * 100_000
    return pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R /Deep 4 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R >>",
            deep,
            b"<< /Length 0 /Filter [" + b"/FlateDecode " * 50 + b"] >>\nstream\n\nendstream",
        ]
    )


def main():
    # make_hostile.py OUT [GOOD_PDF] [--only NAME]: all the files, or the one named.
    only = None
    if "--only" in sys.argv:
        at = sys.argv.index("--only")
        only = sys.argv[at + 1]
        del sys.argv[at : at + 2]
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if only == "empty-markup.docx":
        with open(os.path.join(out, only), "wb") as f:
            f.write(empty_markup_docx())
        return
    rng = random.Random(7)
    files = {
        "bomb.docx": zip_bomb_docx(),
        "deep.docx": deep_docx(),
        "empty-markup.docx": empty_markup_docx(),
        "million-empty-cells.xlsx": million_cells_xlsx(),
        "cyclic.pdf": cyclic_pdf(),
        "nested.pdf": nested_pdf(),
        "random.pdf": bytes(rng.getrandbits(8) for _ in range(65536)),
        "random.docx": bytes(rng.getrandbits(8) for _ in range(65536)),
        "random.pptx": b"PK\x03\x04" + bytes(rng.getrandbits(8) for _ in range(4096)),
        "empty.epub": b"",
        "long-name.epub": long_name_epub(),
    }
    if len(sys.argv) > 2:
        with open(sys.argv[2], "rb") as f:
            good = f.read()
        files["truncated.pdf"] = good[: len(good) // 2]
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
