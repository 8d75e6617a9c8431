export { buildGateway, type GatewayOptions } from './server'
export { authenticate, CALLER_HEADER } from './principal'
