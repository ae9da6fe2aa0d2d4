// Renders GraphiQL with the options the server put in #graphiql-options.
const options = JSON.parse(document.getElementById('graphiql-options').textContent);
YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), { ...options, endpoint: '/graphql' });
