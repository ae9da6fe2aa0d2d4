/**
 * A schema with the shape of the real one, plus a cycle (Seller.products) and a field
 * with a required argument, for unit tests of the translation that need no database.
 */
import { buildSchema } from 'graphql';

export const fixtureSchema = buildSchema(/* GraphQL */ `
  scalar DateTime
  enum OrderStatus { PENDING PAID SHIPPED DELIVERED CANCELLED }
  type Seller { id: Int! name: String! rating: Float products: [Product!]! }
  type ShippingPolicy { id: Int! name: String! minDays: Int! maxDays: Int! feeCents: Int! regions: [String!]! }
  type Review { id: Int! author: String! rating: Int! body: String createdAt: DateTime! }
  type Product {
    id: Int! name: String! description: String priceCents: Int! currency: String!
    seller: Seller! shippingPolicy: ShippingPolicy reviews(limit: Int): [Review!]!
    createdAt: DateTime! updatedAt: DateTime!
    priceIn(currency: String!): Int
  }
  type OrderItem { product: Product! quantity: Int! unitPriceCents: Int! }
  type Order {
    id: Int! status: OrderStatus! memo: String items: [OrderItem!]! totalCents: Int!
    createdAt: DateTime! updatedAt: DateTime! etag: String!
  }
  input OrderItemInput { productId: Int! quantity: Int! }
  input CreateOrderInput { items: [OrderItemInput!]! memo: String }
  input UpdateOrderInput { status: OrderStatus memo: String }
  type Query {
    products(limit: Int = 50, offset: Int = 0): [Product!]!
    product(id: Int!): Product
    orders(limit: Int = 50, offset: Int = 0): [Order!]!
    order(id: Int!): Order
  }
  type Mutation {
    createOrder(input: CreateOrderInput!): Order!
    updateOrder(id: Int!, input: UpdateOrderInput!, etag: String): Order!
  }
`);
