#!/usr/bin/env node
// Writes config.schema.json (the Homebridge UI form) from the plugin's zod schema.
// A test (test/homebridge/config-schema.lab.test.ts) fails when the file is stale.
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { configSchemaJsonText } = require('../dist/homebridge/config-schema-json');

writeFileSync(join(__dirname, '..', 'config.schema.json'), configSchemaJsonText());
console.log('config.schema.json written');
