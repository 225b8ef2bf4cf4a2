"""Cuts texts into words with Lindera (a dictionary segmenter, the Rust crate
through its Python binding) for bench/languages.py: reads {"dictionary": NAME,
"texts": [...]} on stdin, writes each text's lowercased words as JSON.
Runs in a venv of its own per dictionary (bench/.venv-lindera-ipadic,
-jieba): the bindings share a module name."""

import json
import sys

import lindera


def main():
    request = json.load(sys.stdin)
    tokenizer = lindera.TokenizerBuilder().set_mode("normal").set_dictionary(f"embedded://{request['dictionary']}").build()
    out = []
    for text in request["texts"]:
        out.append([t.surface.lower() for t in tokenizer.tokenize(text) if any(c.isalnum() for c in t.surface)])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
