/**
 * docs/SECURITY.md cites tests as `` `file` › "name" ``. Every citation must point at a test file
 * that exists and contains that name (an `it` title or an `it.each` case label, verbatim), so
 * the threat checklist cannot silently drift from the suite that backs it.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = readFileSync(`${ROOT}docs/SECURITY.md`, 'utf8');
const CITATION = /`(test\/[^`]+\.test\.ts)` › "([^"]+)"/g;
const citations = [...DOC.matchAll(CITATION)].map((match) => ({ file: match[1]!, name: match[2]! }));

describe('docs/SECURITY.md', () => {
  it('cites tests', () => {
    expect(citations.length).toBeGreaterThan(50);
  });

  it.each(citations.map((citation) => [`${citation.file} › ${citation.name}`, citation] as const))('cites an existing test: %s', (_label, citation) => {
    const path = `${ROOT}${citation.file}`;
    expect(existsSync(path), `${citation.file} does not exist`).toBe(true);
    const source = readFileSync(path, 'utf8');
    // The whole string literal, not a fragment of a longer title.
    const quoted = ["'", '"', '`'].some((quote) => source.includes(`${quote}${citation.name}${quote}`));
    expect(quoted, `"${citation.name}" is not a test title or case label in ${citation.file}`).toBe(true);
  });
});
