/** The SDK's version, and the API version it was written against (the envelope's `apiVersion`, docs/events.md). */
export const SDK_VERSION = '0.0.0-beta.3'
export { API_VERSION } from '@svc/vocabulary'
