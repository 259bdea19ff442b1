#!/usr/bin/env -S npx tsx
// The example app: `npx cdk synth` / `npx cdk deploy` (cdk.json runs this file with tsx).
// Settings come from context (cdk.json or `-c outbox:<name>=<value>`), see infra/README.md.
import * as cdk from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { settingsFromContext } from './context.ts';
import { OutboxStack } from './orders-stack.ts';

const app = new cdk.App();
const settings = settingsFromContext((k) => app.node.tryGetContext(k));
const stackName = (app.node.tryGetContext('outbox:stackName') as string | undefined) ?? 'DynamoDbOutbox';
new OutboxStack(app, 'DynamoDbOutbox', {
  stackName,
  description: 'dynamodb-outbox: transactional outbox for DynamoDB (publisher, sweeper, recovery, reference consumer)',
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  settings,
});
// Every synth is checked against the AwsSolutions rules; unacknowledged findings fail the synth.
cdk.Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true, writeSuppressionsToCloudFormation: true }));
app.synth();
