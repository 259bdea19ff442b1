// The function code is checked at synth: a missing, non-ELF, wrong-architecture or
// stale artifact is refused with the architecture found, the one expected and the
// build command, instead of failing at the first invocation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkedArtifact, describeElf } from '../lib/artifact.ts';
import { fakeElf, fakeZip, makeAssetDir, newStack } from './helpers.ts';

const SCRIPT = Buffer.from('#!/bin/sh\necho "not a function" >&2\nexit 1\n');

describe('function code artifacts', () => {
  it('refuses an x86_64 build deployed as arm64, naming both and the build command', () => {
    const dir = makeAssetDir({ binary: fakeElf('x86_64') });
    assert.throws(
      () => newStack({ lambdaAssetDir: dir }),
      (e: Error) =>
        /bootstrap is an x86_64 ELF executable, but the functions are deployed as arm64/.test(e.message) &&
        e.message.includes('cargo lambda build --release --arm64'),
    );
  });
  it('refuses an arm64 build deployed as x86_64', () => {
    const dir = makeAssetDir({ binary: fakeElf('arm64') });
    assert.throws(
      () => newStack({ lambdaAssetDir: dir, architecture: 'x86_64' }),
      (e: Error) => /is an arm64 ELF executable, but the functions are deployed as x86_64/.test(e.message) && e.message.includes('--x86-64'),
    );
  });
  it('refuses a file that is not an ELF executable (a script placeholder)', () => {
    const dir = makeAssetDir({ binary: SCRIPT });
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /is not an ELF executable \(it starts with 23 21 2f 62\)/);
  });
  it('refuses an ELF executable for another machine, with its e_machine', () => {
    const dir = makeAssetDir({ binary: fakeElf(0x28) });
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /e_machine 0x28/);
  });
  it('accepts the architecture it deploys, as a binary or a zip (deflated or stored)', () => {
    for (const arch of ['arm64', 'x86_64'] as const) {
      newStack({ lambdaAssetDir: makeAssetDir({ binary: fakeElf(arch) }), architecture: arch });
      newStack({ lambdaAssetDir: makeAssetDir({ zip: fakeZip(fakeElf(arch)) }), architecture: arch });
      newStack({ lambdaAssetDir: makeAssetDir({ zip: fakeZip(fakeElf(arch), { stored: true }) }), architecture: arch });
    }
  });
  it('reads the bootstrap entry inside a zip and refuses the wrong architecture there', () => {
    const dir = makeAssetDir({ zip: fakeZip(fakeElf('x86_64')) });
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /bootstrap\.zip \(entry "bootstrap"\) is an x86_64 ELF executable/);
  });
  it('refuses a zip whose bootstrap entry is not an ELF executable', () => {
    const dir = makeAssetDir({ zip: fakeZip(SCRIPT) });
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /not an ELF executable/);
  });
  it('refuses a zip without a bootstrap entry', () => {
    const dir = makeAssetDir({ zip: fakeZip(fakeElf('arm64'), { name: 'outbox-publisher' }) });
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /no "bootstrap" entry/);
  });
  it('deploys the newer of bootstrap and bootstrap.zip: a newer zip is the one checked', () => {
    // A stale arm64 binary beside a newer x86_64 zip: the zip is what would be deployed.
    const dir = makeAssetDir({ binary: fakeElf('arm64'), zip: fakeZip(fakeElf('x86_64')), zipNewer: true });
    assert.throws(() => newStack({ lambdaAssetDir: dir }), /bootstrap\.zip \(entry "bootstrap"\) is an x86_64/);
    assert.equal(checkedArtifact(dir, 'outbox-publisher', 'x86_64').kind, 'zip');
  });
  it('deploys the newer of bootstrap and bootstrap.zip: a newer binary is the one checked', () => {
    const dir = makeAssetDir({ binary: fakeElf('arm64'), zip: fakeZip(fakeElf('x86_64')), zipNewer: false });
    assert.equal(checkedArtifact(dir, 'outbox-publisher', 'arm64').kind, 'binary');
    assert.throws(() => checkedArtifact(dir, 'outbox-publisher', 'x86_64'), /bootstrap is an arm64/);
  });
  it('describes ELF headers in words', () => {
    assert.equal(describeElf(fakeElf('arm64')).architecture, 'arm64');
    assert.equal(describeElf(fakeElf('x86_64')).architecture, 'x86_64');
    assert.match(describeElf(Buffer.alloc(0)).found, /the file is empty/);
  });
});
