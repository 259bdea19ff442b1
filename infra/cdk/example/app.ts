#!/usr/bin/env -S npx tsx
// The example app: `npx cdk synth` / `npx cdk deploy` (cdk.json runs this file with tsx).
// Settings come from context (cdk.json or `-c outbox:<name>=<value>`), see infra/README.md.
import * as cdk from 'aws-cdk-lib';
import { addExampleStack } from './orders-stack.ts';

const app = new cdk.App();
addExampleStack(app);
app.synth();
