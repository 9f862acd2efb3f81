//! Native render tests: the page rendered to HTML with yew's server renderer, no browser needed.
#![cfg(not(target_arch = "wasm32"))]

use vramfit::ui::i18n::Lang;
use vramfit::ui::{App, AppProps};

async fn render(query: &str, lang: Lang) -> String {
    yew::LocalServerRenderer::<App>::with_props(AppProps {
        query: Some(query.to_string().into()),
        lang: Some(lang),
        ..AppProps::default()
    })
    .render()
    .await
}

#[tokio::test]
async fn default_page_shows_verdict_chart_and_table() {
    let html = render("", Lang::En).await;
    assert!(html.contains("vramfit"), "{html}");
    assert!(html.contains("id=\"verdict\""));
    assert!(html.contains("<svg"));
    assert!(html.contains("id=\"breakdown\""));
    assert!(html.contains("GiB"));
}

#[tokio::test]
async fn a_huge_job_does_not_fit_and_says_so() {
    let html = render("model=llama-3.1-70b&mode=full&gpu=rtx-3060-12gb", Lang::En).await;
    assert!(html.contains("Does not fit: GPU memory"), "{html}");
}

#[tokio::test]
async fn chinese_strings_and_bad_link_notice() {
    let html = render("batch=abc&foo=1", Lang::Zh).await;
    assert!(html.contains("模型与硬件"));
    assert!(html.contains("id=\"link-notice\""));
    assert!(html.contains("batch=abc") && html.contains("foo"));
}

#[tokio::test]
async fn custom_model_and_gpu_from_a_link() {
    let html = render(
        "model=custom&arch=l:2,h:64,a:4,k:4,d:16,i:128,v:100,t:1&gpu=custom&vram=7",
        Lang::En,
    )
    .await;
    assert!(html.contains("id=\"arch-editor\""), "{html}");
    assert!(html.contains("GPU 7 GiB"), "{html}");
}

#[tokio::test]
async fn advice_says_which_limit_and_what_to_change() {
    let html = render("mode=full&gpu=rtx-4090", Lang::En).await;
    assert!(
        html.contains("Don&#x27;t buy RAM") || html.contains("Don't buy RAM"),
        "{html}"
    );
    assert!(html.contains("id=\"remedies\""));
    assert!(html.contains("id=\"export-llamafactory\""));
    let zh = render("mode=full&gpu=rtx-4090", Lang::Zh).await;
    assert!(zh.contains("不用加内存"));
}

#[tokio::test]
async fn warnings_for_what_the_gpu_cannot_do() {
    let html = render("gpu=t4&attn=flash2", Lang::En).await;
    assert!(html.contains("id=\"warnings\""), "{html}");
    assert!(html.contains("FlashAttention-2 needs an Ampere"));
    assert!(html.contains("no bf16 support"));
}

#[tokio::test]
async fn vision_inputs_appear_only_for_a_model_with_a_vision_tower() {
    let text = render("", Lang::En).await;
    assert!(!text.contains("id=\"vision-inputs\""));
    let vlm = render("model=qwen2.5-vl-7b-instruct&images=2&vtower=1", Lang::En).await;
    assert!(vlm.contains("id=\"vision-inputs\""), "{vlm}");
    assert!(vlm.contains("id=\"images\"") && vlm.contains("id=\"vtower\""));
    // 768² → 756² → 54² patches, 2 × 2 merged: 729 tokens an image.
    assert!(vlm.contains("729 tokens per image"), "{vlm}");
    assert!(vlm.contains("Vision tower &amp; images") || vlm.contains("Vision tower & images"));
    let zh = render("model=gemma-3-4b-it&images=1", Lang::Zh).await;
    assert!(
        zh.contains("每个样本的图像数") && zh.contains("每张图像 256 个 token"),
        "{zh}"
    );
}

#[tokio::test]
async fn trainable_tokens_ask_for_their_count_and_say_what_they_train() {
    let html = render(
        "model=llama-3.2-1b&peft=trainable-tokens&ttok=100",
        Lang::En,
    )
    .await;
    assert!(html.contains("id=\"ttok\""), "{html}");
    assert!(!html.contains("id=\"rank\""), "{html}");
    // 100 tokens × hidden 2048.
    assert!(html.contains("Trains 204,800 parameters"), "{html}");
    assert!(html.contains("id=\"peft-vs-lora\""), "{html}");
    let zh = render(
        "model=llama-3.2-1b&peft=trainable-tokens&ttok=100",
        Lang::Zh,
    )
    .await;
    assert!(zh.contains("训练 204,800 个参数"), "{zh}");
}

#[tokio::test]
async fn mxfp4_says_when_it_is_trained_in_bf16_or_quantizes_nothing() {
    let train = render("model=gpt-oss-20b&weights=mxfp4", Lang::En).await;
    assert!(train.contains("id=\"mxfp4-trains-bf16\""), "{train}");
    let serve = render("model=gpt-oss-20b&weights=mxfp4&mode=inference", Lang::En).await;
    assert!(
        !serve.contains("id=\"mxfp4-trains-bf16\"") && !serve.contains("id=\"mxfp4-no-experts\"")
    );
    let dense = render("model=llama-3.2-1b&weights=mxfp4&mode=inference", Lang::Zh).await;
    assert!(dense.contains("id=\"mxfp4-no-experts\""), "{dense}");
}
