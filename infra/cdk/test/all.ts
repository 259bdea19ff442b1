// Every test file (test/*.test.ts), in name order, in this one process (`npm test`,
// infra/check.py): a process per file costs ~3.5 CPU-s each to load aws-cdk-lib and warm up,
// and helpers.ts's synth() then shares the templates of the same settings across files.
// One file alone: node --import tsx --test test/<name>.test.ts
import * as fs from 'node:fs';

for (const file of fs.readdirSync(__dirname).filter((f) => f.endsWith('.test.ts')).sort()) require(`./${file}`);
