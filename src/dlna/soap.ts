/** SOAP for the renderers: the shared UPnP module (src/protocols/upnp/soap.ts). */
export { MAX_SOAP_BYTES, parseSoapRequest, soapFault, soapResponse, UpnpError, UPNP_ERRORS } from '../protocols/upnp/soap';
export type { SoapRequest, UpnpErrorName } from '../protocols/upnp/soap';
