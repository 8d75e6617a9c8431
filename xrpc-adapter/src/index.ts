export * from './server'
export { createGatewayClient, type GatewayClient } from './gateway-client'
export { methodTable } from './methods'
export { didDocument, didWebDocumentPath, type ServiceIdentity } from './did-document'
