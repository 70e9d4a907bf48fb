import { errorBody, type ErrorBody, type HubError } from '../core/errors';

/**
 * The error shape on the first API version's `/v1` paths: that dialect calls the session
 * token SessionID, so its errors (messages and Parameter) say SessionID too.
 */
export function legacyErrorBody(e: HubError): ErrorBody {
  const body = errorBody(e);
  body.ErrorMessage = body.ErrorMessage.replace(/\bSessionToken\b/g, 'SessionID');
  if (body.Parameter === 'SessionToken') body.Parameter = 'SessionID';
  return body;
}
