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
    parameters.push({ name, in: 'query', required: !s.safeParse(undefined).success, schema: { type: 'string' }, example: op.example[name] });
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

function jsonSchema(schema: z.ZodType): unknown {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function errorCodeDescription(): string {
  return Object.entries(ERROR_CODES)
    .map(([code, e]) => `${code} (HTTP ${e.status}): ${e.description}`)
    .join('\n');
}
