#!/usr/bin/env python3
"""Every relative link of README.md and docs/ resolves: the file (or folder)
exists and, for a link into a markdown page, the #anchor is one of that
page's headings, as GitHub makes anchors of them.

    check_links.py SOURCE_ROOT

Links inside code blocks and code spans are not links. Exits 1 naming each
link that does not resolve, with its file and line.
"""
import os
import re
import sys

LINK = re.compile(r'(?<!\\)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$')
FENCE = re.compile(r'^\s{0,3}(```|~~~)')


def pages(root):
    yield os.path.join(root, 'README.md')
    for d, dirs, files in os.walk(os.path.join(root, 'docs')):
        dirs.sort()
        for f in sorted(files):
            if f.endswith('.md'):
                yield os.path.join(d, f)


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fence = None
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                if fence is None:
                    fence = m.group(1)
                elif fence == m.group(1):
                    fence = None
                continue
            if fence is None:
                yield n, line.rstrip('\n')


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r'`([^`]*)`', r'\1', heading)
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = text.strip().lower()
    text = ''.join(c for c in text if c.isalnum() or c in '-_ ')
    return text.replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            m = re.match(r'^#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            s = slug(m.group(1))
            if s in seen:
                seen[s] += 1
                found.add('%s-%d' % (s, seen[s]))
            else:
                seen[s] = 0
                found.add(s)
        cache[path] = found
    return cache[path]


def main():
    root = os.path.realpath(sys.argv[1])
    bad = checked = 0
    for page in pages(root):
        rel = os.path.relpath(page, root)
        for n, line in prose_lines(page):
            text = re.sub(r'`[^`]*`', '', line)
            targets = [m.group(1) for m in LINK.finditer(text)]
            m = REFDEF.match(text)
            if m:
                targets.append(m.group(1))
            for target in targets:
                if re.match(r'^[a-z][a-z0-9+.-]*:', target):
                    continue  # http:, https:, mailto:
                checked += 1
                path, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path \
                    else page
                why = None
                if not os.path.exists(dest):
                    why = 'no such file'
                elif not dest.startswith(root + os.sep) and dest != root:
                    why = 'outside the source tree'
                elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                    why = 'no heading with the anchor #%s in %s' % (
                        anchor, os.path.relpath(dest, root))
                if why:
                    print('%s:%d: %s: %s' % (rel, n, target, why))
                    bad += 1
    print('%d relative links, %d broken' % (checked, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
