//! The root component.

use yew::prelude::*;

/// The whole calculator page.
#[component]
pub fn App() -> Html {
    html! {
        <main class="app">
            <h1>{ "vramfit" }</h1>
            <p class="tagline">{ "Does your LLM fine-tune fit in GPU memory?" }</p>
        </main>
    }
}
