import { z } from 'zod';
import { ERROR_CODES } from '../core/errors';
import { OPERATIONS, type Operation } from '../operations/table';

/** OpenAPI 3.1 document of the REST API, generated from the operation table. */
export function buildOpenApi(version: string): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const op of OPERATIONS) paths[`/api/v1/${op.name}`] = { get: operationDoc(op) };
  return {
    openapi: '3.1.0',
    info: {
      title: 'SpeakerHub — Speaker Control Service API',
      version,
      description:
        'Every operation is GET /api/v1/<operation> with parameters in the query string and a Bearer token. ' +
        'Failures answer {"Result":"false","ErrorCode","ErrorMessage"}; see components.schemas.Error for the codes.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['Result', 'ErrorCode', 'ErrorMessage'],
          properties: {
            Result: { const: 'false' },
            ErrorCode: { enum: Object.keys(ERROR_CODES), description: errorCodeDescription() },
            ErrorMessage: { type: 'string' },
            Parameter: { type: 'string', description: 'The offending parameter, when there is one.' },
          },
        },
      },
    },
    security: [{ bearer: [] }],
    paths,
  };
}

function operationDoc(op: Operation): Record<string, unknown> {
  const parameters: unknown[] = [];
  if (op.needsSession) {
    parameters.push({ name: 'SessionToken', in: 'query', required: true, schema: { type: 'string' }, description: 'From init_session.' });
  }
  for (const [name, schema] of Object.entries(op.params.shape)) {
    const s = schema as z.ZodType;
    const described = parameterSchema(s);
    parameters.push({
      name,
      in: 'query',
      required: !s.safeParse(undefined).success,
      schema: described,
      // A list travels as one comma-separated value (DeviceIDList=1,2,3).
      ...(described.type === 'array' ? { style: 'form', explode: false } : {}),
      example: op.example[name],
    });
  }
  const failureStatuses = [...new Set(Object.values(ERROR_CODES).map((e) => e.status))].filter((s) => s !== 200);
  const responses: Record<string, unknown> = {
    200: {
      description: 'Success, or a failed operation ({"Result":"false"} with an ErrorCode).',
      content: { 'application/json': { schema: { oneOf: [jsonSchema(op.response), { $ref: '#/components/schemas/Error' }] } } },
    },
  };
  for (const status of failureStatuses) {
    responses[status] = { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  }
  return { operationId: op.name, summary: op.summary, tags: [op.group], parameters, responses };
}

/**
 * A parameter's JSON Schema as the handler sees it (the validated, typed value: Volume an
 * integer 0–50, DeviceID a digit pattern, DeviceIDList an array), derived from its zod
 * schema. Parameters are pipelines (text in, typed value out) ending at times in a transform
 * JSON Schema cannot express; then the last stage that has a type describes it.
 */
export function parameterSchema(schema: z.ZodType): Record<string, unknown> {
  const described = typedStage(schema);
  return described ?? { type: 'string' };
}

function typedStage(schema: z.ZodType): Record<string, unknown> | undefined {
  const own = plainJsonSchema(schema);
  if (own && 'type' in own) return own;
  const def = (schema as unknown as { def?: { type?: string; in?: z.ZodType; out?: z.ZodType; innerType?: z.ZodType } }).def;
  if (!def) return undefined;
  if (def.innerType) return typedStage(def.innerType); // optional, default, nullable …
  if (def.type === 'pipe') return (def.out && typedStage(def.out)) ?? (def.in && typedStage(def.in));
  return undefined;
}

function plainJsonSchema(schema: z.ZodType): Record<string, unknown> | undefined {
  try {
    const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
    return rest;
  } catch {
    return undefined;
  }
}

function jsonSchema(schema: z.ZodType): unknown {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function errorCodeDescription(): string {
  return Object.entries(ERROR_CODES)
    .map(([code, e]) => `${code} (HTTP ${e.status}): ${e.description}`)
    .join('\n');
}
