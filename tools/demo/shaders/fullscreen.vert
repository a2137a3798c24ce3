#version 450

// One triangle that covers the whole viewport, with no vertex buffer: vertex 0, 1 and 2 sit
// at (0,0), (2,0) and (0,2) in uv space, so the viewport's [0,1] square lies inside it.

layout(location = 0) out vec2 out_uv;

void main()
{
    vec2 uv = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2);
    out_uv = uv;
    gl_Position = vec4(uv * 2.0 - 1.0, 0.0, 1.0);
}
