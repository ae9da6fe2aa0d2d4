// Swagger UI over /openapi.json; "Try it out" sends the token typed above the reference.
const tokenInput = document.getElementById('token');
document.getElementById('token-form').addEventListener('submit', (event) => event.preventDefault());
SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  tryItOutEnabled: true,
  requestInterceptor(request) {
    const token = tokenInput.value.trim();
    const sameOrigin = new URL(request.url, location.href).origin === location.origin;
    if (token && sameOrigin) request.headers.Authorization = 'Bearer ' + token;
    return request;
  },
});
