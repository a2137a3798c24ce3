#version 450

// --draws: one small triangle per draw, read from the bound vertex buffer through the bound
// index buffer. Where exactly it lands matters little: a 4x4 scissor keeps every draw to a
// few pixels, so the CPU-side cost of the draw, not its pixels, is what shows.

layout(location = 0) in vec2 in_position;

void main()
{
    gl_Position = vec4(in_position, 0.0, 1.0);
}
