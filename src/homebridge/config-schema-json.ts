import { z } from 'zod';
import { PlatformConfigSchema } from './config';
import { PLATFORM_NAME } from './homebridge-api';

/**
 * config.schema.json for the Homebridge UI, derived from the zod schema so the form can never
 * offer a key the plugin rejects (or miss one it reads). Homebridge's own keys (platform,
 * _bridge) are the UI's business and left out of the form.
 */
export function buildConfigSchemaJson(): Record<string, unknown> {
  const json = z.toJSONSchema(PlatformConfigSchema, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, unknown>;
    required?: string[];
    $schema?: string;
  };
  delete json.$schema;
  const properties = { ...json.properties };
  delete properties.platform;
  delete properties._bridge;
  // hub.advanced: a JSON text box in the form (the schema also takes the object from a config file).
  const hub = properties.hub as { properties: Record<string, unknown> };
  hub.properties.advanced = {
    type: 'string',
    title: 'Other hub settings (JSON)',
    description: 'Any key of the hub configuration (see the README) as a JSON object, merged over the settings above.',
    'x-schema-form': { type: 'textarea' },
  };
  return {
    pluginAlias: PLATFORM_NAME,
    pluginType: 'platform',
    singular: true,
    headerDisplay:
      'Your speakers in the Home app and under Siri. Pick the speaker drivers (or a remote hub), then the HomeKit service. See the README for the service trade-offs.',
    schema: {
      type: 'object',
      properties,
      required: json.required?.filter((k) => k !== 'platform') ?? [],
    },
  };
}

export function configSchemaJsonText(): string {
  return `${JSON.stringify(buildConfigSchemaJson(), null, 2)}\n`;
}
